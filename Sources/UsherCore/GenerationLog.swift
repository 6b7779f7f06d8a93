/// Users in the order of a generation that only grows: the order they were added to the device (`list_users`,
/// paging) or the order they last became active (who takes over when the active user goes away).
///
/// Generations are handed out in increasing order, so recording a user is an append. An entry whose user was removed
/// or moved on is dead (the owner's `isLive` recognises it); dead entries are dropped in one pass once they outnumber
/// live ones, and from the end when they get there, so every operation is O(1) amortised (lookups by generation are a
/// binary search) and memory stays proportional to the number of users.
struct GenerationLog: Sendable {
    struct Entry: Sendable {
        var generation: Int64
        var userID: String
    }

    private(set) var entries: [Entry] = []
    private var dead = 0

    /// Makes room for `count` entries in all (loading appends them in one go).
    mutating func reserveCapacity(_ count: Int) {
        self.entries.reserveCapacity(count)
    }

    /// Records a user at `generation`.
    mutating func append(_ userID: String, generation: Int64) {
        let entry = Entry(generation: generation, userID: userID)
        if let last = self.entries.last, last.generation > generation {
            // Older than the newest entry (only loading a hand-edited database does this): keep the order anyway.
            self.entries.insert(entry, at: self.firstIndex(after: generation))
        } else {
            self.entries.append(entry)
        }
    }

    /// Records that one entry died; compacts when dead entries outnumber live ones.
    mutating func markRemoved(isLive: (Entry) -> Bool) {
        self.dead += 1
        guard self.dead > 64, self.dead * 2 > self.entries.count else { return }
        self.entries.removeAll { !isLive($0) }
        self.dead = 0
    }

    /// The live entry with the highest generation.
    mutating func newest(isLive: (Entry) -> Bool) -> Entry? {
        while let last = self.entries.last, !isLive(last) {
            self.entries.removeLast()
            self.dead = max(0, self.dead - 1)
        }
        return self.entries.last
    }

    /// The newest live entry that `isEligible` accepts, without dropping the ones it passes over (they stay live:
    /// a user active on another seat is skipped by the successor rule, not forgotten). Dead entries at the end are
    /// dropped first, as `newest` does; the scan then passes over at most the users active on other seats (a handful)
    /// and the dead entries between them.
    mutating func newest(isLive: (Entry) -> Bool, isEligible: (Entry) -> Bool) -> Entry? {
        guard self.newest(isLive: isLive) != nil else { return nil }
        for entry in self.entries.reversed() where isLive(entry) && isEligible(entry) { return entry }
        return nil
    }

    /// The index of the first entry with a generation above `generation` (binary search).
    func firstIndex(after generation: Int64) -> Int {
        var low = 0
        var high = self.entries.count
        while low < high {
            let middle = (low + high) / 2
            if self.entries[middle].generation <= generation {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }
}
