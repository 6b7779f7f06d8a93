/// The users on the device, the active one and the generation, with the indexes that keep every change O(log n).
///
/// The registry keeps two of these: its working state, where changes are computed (and applied before their commit,
/// so a batch of changes can share one), and the published state of `SessionView`, which holds only committed changes
/// and answers reads. Every change goes through `put` and `remove`, which keep the indexes true:
///
/// - `order`: users by the generation they were added at (`list_users`, paging);
/// - `recency`: logged-in users, most recently active first (who takes over when the active user goes away);
/// - `anonymous`: each provider's logged-in anonymous users (an anonymous login reuses one);
/// - `loggedInCount`.
package struct SessionState: Sendable {
    package internal(set) var generation: Int64 = 0
    package internal(set) var activeUserID: String?
    /// Users are kept boxed: a table of 100,000 users is then 100,000 pointers (the table has room for twice as many
    /// as it holds) rather than 100,000 inline records of 240 bytes, and the working and published states share the
    /// records of users that did not change.
    private var table: [String: Record] = [:]
    package private(set) var loggedInCount = 0
    private var order = UserOrder()
    /// Logged-in users by `-activeGeneration`: the top is the most recently active one.
    private var recency = IndexedHeap<Int64>()
    private var anonymous: [String: Set<String>] = [:]

    /// One user, immutable: a change replaces the record.
    private final class Record: Sendable {
        let user: User

        init(_ user: User) {
            self.user = user
        }
    }

    package init() {}

    /// How many users there are.
    package var count: Int { self.table.count }

    /// Every user, in no particular order.
    package var users: some Sequence<User> { self.table.values.lazy.map(\.user) }

    package init(generation: Int64, users: [User]) {
        self.generation = generation
        self.table.reserveCapacity(users.count)
        for user in users.sorted(by: { $0.addedGeneration < $1.addedGeneration }) { self.put(user) }
    }

    package subscript(userID: String) -> User? { self.table[userID]?.user }

    /// Adds or replaces a user.
    package mutating func put(_ user: User) {
        let previous = self.table.updateValue(Record(user), forKey: user.id)?.user
        if let previous {
            self.unindex(previous)
            if previous.addedGeneration != user.addedGeneration {
                self.order.markRemoved(isLive: self.isLive)
                self.order.append(user.id, addedGeneration: user.addedGeneration)
            }
        } else {
            self.order.append(user.id, addedGeneration: user.addedGeneration)
        }
        self.index(user)
    }

    /// Removes a user; returns it.
    @discardableResult
    package mutating func remove(_ userID: String) -> User? {
        guard let previous = self.table.removeValue(forKey: userID)?.user else { return nil }
        self.unindex(previous)
        self.order.markRemoved(isLive: self.isLive)
        if self.activeUserID == userID { self.activeUserID = nil }
        return previous
    }

    private func isLive(_ entry: UserOrder.Entry) -> Bool {
        self.table[entry.userID]?.user.addedGeneration == entry.addedGeneration
    }

    private mutating func index(_ user: User) {
        guard user.state == .loggedIn else { return }
        self.loggedInCount += 1
        self.recency.insert(user.id, priority: -user.activeGeneration)
        if user.isAnonymous { self.anonymous[user.provider, default: []].insert(user.id) }
    }

    private mutating func unindex(_ user: User) {
        guard user.state == .loggedIn else { return }
        self.loggedInCount -= 1
        self.recency.remove(user.id)
        if user.isAnonymous {
            self.anonymous[user.provider]?.remove(user.id)
            if self.anonymous[user.provider]?.isEmpty == true { self.anonymous[user.provider] = nil }
        }
    }

    // MARK: - Questions the indexes answer

    /// The logged-in user who was active most recently: who takes over when the active user goes away.
    package mutating func mostRecentlyActiveLoggedInUser() -> String? {
        self.recency.top()?.key
    }

    /// The provider's logged-in anonymous user (the most recently active one, should there be several).
    package func loggedInAnonymous(of provider: String) -> User? {
        self.anonymous[provider]?.lazy.compactMap { self[$0] }.max { $0.activeGeneration < $1.activeGeneration }
    }

    /// Up to `limit` users added after `addedGeneration` (from the first when nil), in the order they were added, and
    /// whether more follow.
    package func page(after addedGeneration: Int64?, limit: Int) -> (users: [User], more: Bool) {
        let entries = self.order.entries
        var index = addedGeneration.map(self.order.firstIndex(after:)) ?? 0
        var users: [User] = []
        users.reserveCapacity(min(limit, self.table.count))
        while index < entries.count, users.count < limit {
            if self.isLive(entries[index]), let user = self[entries[index].userID] { users.append(user) }
            index += 1
        }
        while index < entries.count, !self.isLive(entries[index]) { index += 1 }
        return (users, index < entries.count)
    }

    /// Every user, in the order they were added.
    package func allInOrder() -> [User] {
        self.page(after: nil, limit: Int.max).users
    }
}
