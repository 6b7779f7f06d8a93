/// The users of a `SessionState` by id: a hash table of boxed, immutable user records, found by the id each record
/// holds (open addressing, linear probing, at most three quarters full).
///
/// Why not `[String: Box]`: a dictionary keeps each key beside its value, so every slot is 24 bytes (the id's 16 and
/// the box's 8) where the id is already in the record; this table's slots are the 8 bytes of the reference. With
/// 100,000 users that is 2 MB instead of 6 MB, and the registry holds two tables (working and published state). Like
/// a dictionary it is a value: copying shares the storage until one copy changes.
struct UserTable: Sendable {
    /// One user, immutable: a change replaces the box. The working and published states share the boxes of users
    /// that did not change.
    final class Box: Sendable {
        let user: User

        init(_ user: User) {
            self.user = user
        }
    }

    /// A power of two in length (or empty); nil is a free slot.
    private var slots: ContiguousArray<Box?> = []
    private(set) var count = 0

    init() {}

    /// Makes room for `count` users without growing.
    mutating func reserveCapacity(_ count: Int) {
        if self.slots.count * 3 / 4 < count { self.resize(to: Self.capacity(for: count)) }
    }

    subscript(id: String) -> User? {
        guard !self.slots.isEmpty else { return nil }
        return self.slots[self.probe(id)]?.user
    }

    /// Every user, in no particular order.
    var users: some Sequence<User> { self.slots.lazy.compactMap { $0?.user } }

    /// Puts `user` in the place of the one with its id, if any; returns that one.
    @discardableResult
    mutating func update(_ user: User) -> User? {
        // Room first (at worst one growth early, for a replacement at the threshold): then one probe finds either
        // the user's slot or the free slot it goes to.
        if (self.count + 1) * 4 > self.slots.count * 3 { self.resize(to: Self.capacity(for: self.count + 1)) }
        let index = self.probe(user.id)
        let previous = self.slots[index]?.user
        self.slots[index] = Box(user)
        if previous == nil { self.count += 1 }
        return previous
    }

    /// Removes the user with this id; returns it.
    @discardableResult
    mutating func remove(_ id: String) -> User? {
        guard !self.slots.isEmpty else { return nil }
        var hole = self.probe(id)
        guard let removed = self.slots[hole]?.user else { return nil }
        self.slots[hole] = nil
        self.count -= 1
        // Backward shift: move up each following entry of the run that may no longer be reached across the hole, so
        // that every lookup still ends at the first free slot (no tombstones).
        let mask = self.slots.count - 1
        var index = (hole + 1) & mask
        while let box = self.slots[index] {
            let home = Self.home(of: box.user.id, mask: mask)
            // The entry stays where it is if its home lies cyclically in (hole, index].
            let stays = hole <= index ? (hole < home && home <= index) : (hole < home || home <= index)
            if !stays {
                self.slots[hole] = box
                self.slots[index] = nil
                hole = index
            }
            index = (index + 1) & mask
        }
        return removed
    }

    /// The slot of the user with this id, or the free slot where the run of its home ends (where it would go). The
    /// table is never full, so there is one.
    private func probe(_ id: String) -> Int {
        let mask = self.slots.count - 1
        var index = Self.home(of: id, mask: mask)
        while let box = self.slots[index], box.user.id != id { index = (index + 1) & mask }
        return index
    }

    private mutating func resize(to capacity: Int) {
        let old = self.slots
        self.slots = ContiguousArray(repeating: nil, count: capacity)
        for case let box? in old { self.slots[self.probe(box.user.id)] = box }
    }

    private static func home(of id: String, mask: Int) -> Int {
        id.hashValue & mask
    }

    /// The smallest power of two (at least 8) that holds `count` entries at most three quarters full.
    private static func capacity(for count: Int) -> Int {
        var capacity = 8
        while capacity * 3 / 4 < count { capacity *= 2 }
        return capacity
    }
}
