/// The users on the device, the active one and the generation, with the indexes that keep every change O(log n).
///
/// The registry keeps two of these: its working state, where changes are computed (and applied before their commit,
/// so a batch of changes can share one), and the published state of `SessionView`, which holds only committed changes
/// and answers reads. Every change goes through `put` and `remove`, which keep the indexes true:
///
/// - `order`: users by the generation they were added at (`list_users`, paging);
/// - `recency`: logged-in users by the generation they last became active at (who takes over when the active user
///   goes away);
/// - `anonymous`: each provider's logged-in anonymous users (an anonymous login reuses one);
/// - `loggedInCount`.
package struct SessionState: Sendable {
    package internal(set) var generation: Int64 = 0
    /// Each seat's active user, and the other way round (a user is active on at most one seat). Seats are few; these
    /// are small tables, copied whole when a change is rolled back.
    package internal(set) var seats = SeatAssignments()
    /// The seat of a request that names none: its active user is the device-wide active user of one-seat devices.
    package internal(set) var defaultSeat = SeatConfiguration.defaultSeatName
    /// The default seat's active user.
    package var activeUserID: String? { self.seats.user(on: self.defaultSeat) }
    /// Users are kept boxed (`UserTable`): a table of 100,000 users is then a table of pointers rather than of
    /// inline records of 240 bytes, and the working and published states share the records of users that did not
    /// change.
    private var table = UserTable()
    package private(set) var loggedInCount = 0
    /// Every user, by the generation it was added at.
    private var order = GenerationLog()
    /// Logged-in users, by the generation at which they last became active: the newest live entry takes over.
    private var recency = GenerationLog()
    private var anonymous: [String: Set<String>] = [:]

    package init() {}

    /// How many users there are.
    package var count: Int { self.table.count }

    /// Every user, in no particular order.
    package var users: some Sequence<User> { self.table.users }

    package init(generation: Int64, users: [User]) {
        self.generation = generation
        self.table.reserveCapacity(users.count)
        self.order.reserveCapacity(users.count)
        // Each index is built in its own order, so that loading is appends only. Positions are sorted rather than
        // users: a user is a large value, and sorting 100,000 of them copies each several times.
        let byAdded = users.indices.sorted { users[$0].addedGeneration < users[$1].addedGeneration }
        var loggedIn: [(activeGeneration: Int64, id: String)] = []
        loggedIn.reserveCapacity(users.count)
        for index in byAdded {
            let user = users[index]
            guard self.table.update(user) == nil else { continue }
            self.order.append(user.id, generation: user.addedGeneration)
            guard user.state == .loggedIn else { continue }
            self.loggedInCount += 1
            if user.isAnonymous { self.anonymous[user.provider, default: []].insert(user.id) }
            loggedIn.append((user.activeGeneration, user.id))
        }
        loggedIn.sort { $0.activeGeneration < $1.activeGeneration }
        self.recency.reserveCapacity(loggedIn.count)
        for (activeGeneration, id) in loggedIn {
            self.recency.append(id, generation: activeGeneration)
        }
    }

    package subscript(userID: String) -> User? { self.table[userID] }

    /// Adds or replaces a user.
    package mutating func put(_ user: User) {
        let previous = self.table.update(user)
        if previous?.addedGeneration != user.addedGeneration {
            if previous != nil { self.order.markRemoved(isLive: self.isLive) }
            self.order.append(user.id, generation: user.addedGeneration)
        }
        self.reindex(from: previous, to: user)
    }

    /// Removes a user; returns it.
    @discardableResult
    package mutating func remove(_ userID: String) -> User? {
        guard let previous = self.table.remove(userID) else { return nil }
        self.reindex(from: previous, to: nil)
        self.order.markRemoved(isLive: self.isLive)
        self.seats.clear(user: userID)
        return previous
    }

    private func isLive(_ entry: GenerationLog.Entry) -> Bool {
        self.table[entry.userID]?.addedGeneration == entry.generation
    }

    private func isActiveLive(_ entry: GenerationLog.Entry) -> Bool {
        guard let user = self.table[entry.userID] else { return false }
        return user.state == .loggedIn && user.activeGeneration == entry.generation
    }

    /// Keeps the logged-in indexes true when a user goes from `previous` to `user` (nil: absent). An update that
    /// leaves them as they were (a refresh, a new name) touches nothing.
    private mutating func reindex(from previous: User?, to user: User?) {
        let was = previous.flatMap { $0.state == .loggedIn ? $0 : nil }
        let now = user.flatMap { $0.state == .loggedIn ? $0 : nil }
        self.loggedInCount += (now == nil ? 0 : 1) - (was == nil ? 0 : 1)
        if was?.activeGeneration != now?.activeGeneration || (was == nil) != (now == nil) {
            if was != nil { self.recency.markRemoved(isLive: self.isActiveLive) }
            if let now { self.recency.append(now.id, generation: now.activeGeneration) }
        }
        if let was, was.isAnonymous {
            self.anonymous[was.provider]?.remove(was.id)
            if self.anonymous[was.provider]?.isEmpty == true { self.anonymous[was.provider] = nil }
        }
        if let now, now.isAnonymous { self.anonymous[now.provider, default: []].insert(now.id) }
    }

    // MARK: - Questions the indexes answer

    /// The logged-in user who was active most recently: who takes over when the active user goes away.
    package mutating func mostRecentlyActiveLoggedInUser() -> String? {
        self.recency.newest(isLive: self.isActiveLive)?.userID
    }

    /// Who takes over a seat: the most recently active logged-in user who is not active on any seat.
    package mutating func successor() -> String? {
        let seats = self.seats
        return self.recency.newest(isLive: self.isActiveLive) { seats.seat(of: $0.userID) == nil }?.userID
    }

    /// The provider's logged-in anonymous user (the most recently active one, should there be several).
    package func loggedInAnonymous(of provider: String) -> User? {
        self.anonymous[provider]?.lazy.compactMap { self[$0] }.max { $0.activeGeneration < $1.activeGeneration }
    }

    /// Up to `limit` users added after `addedGeneration` (from the first when nil) and at or before `last` (every one
    /// when nil), in the order they were added, and whether more follow.
    package func page(
        after addedGeneration: Int64?,
        through last: Int64? = nil,
        limit: Int
    ) -> (users: [User], more: Bool) {
        let entries = self.order.entries
        var index = addedGeneration.map(self.order.firstIndex(after:)) ?? 0
        // Entries are in the order of their generation: the page ends at the first one past `last`.
        let end = last.map(self.order.firstIndex(after:)) ?? entries.count
        var users: [User] = []
        users.reserveCapacity(min(limit, self.table.count))
        while index < end, users.count < limit {
            if self.isLive(entries[index]), let user = self[entries[index].userID] { users.append(user) }
            index += 1
        }
        while index < end, !self.isLive(entries[index]) { index += 1 }
        return (users, index < end)
    }

    /// How many entries the order and recency logs hold, dead ones included (for tests: they stay proportional to
    /// the number of users).
    package var indexEntryCount: Int { self.order.entries.count + self.recency.entries.count }

    /// Every user, in the order they were added.
    package func allInOrder() -> [User] {
        self.page(after: nil, limit: Int.max).users
    }
}
