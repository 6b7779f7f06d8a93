import UsherProtocol

/// Each user's last refresh, for about a second: when it was made, and the issue time of the tokens it produced, which
/// tells them apart from a later login's (`SessionRegistry+TokenRequests`, `refresh`).
///
/// A `refresh` asked for right after one was made is answered with the tokens that one produced, not by calling the
/// provider again: a client that refreshes on every start, started many times at once, costs one refresh.
package struct RecentRefreshes {
    /// How long a refresh answers the `refresh` requests that come after it: as `access_token` refreshes at most about
    /// once a second (a token issued within the last second satisfies any `min_valid`), so does `refresh`.
    package static let reuseMilliseconds: Int64 = 1000
    /// Past this many entries, those older than `reuseMilliseconds` are dropped as a new one is added, so the table
    /// holds about the users refreshed in the last second.
    package static let pruneThreshold = 1024

    private var entries: [String: (at: Timestamp, issuedAt: Timestamp)] = [:]

    package init() {}

    /// A refresh of `userID` produced tokens issued at `issuedAt`, at `now`.
    package mutating func remember(_ userID: String, issuedAt: Timestamp, now: Timestamp) {
        if self.entries.count >= Self.pruneThreshold {
            self.entries = self.entries.filter {
                now.millisecondsSinceEpoch - $0.value.at.millisecondsSinceEpoch < Self.reuseMilliseconds
            }
        }
        self.entries[userID] = (now, issuedAt)
    }

    /// Whether the tokens `userID` holds, issued at `issuedAt`, are those a refresh made less than `reuseMilliseconds`
    /// before `now`.
    package func isFresh(_ userID: String, issuedAt: Timestamp, now: Timestamp) -> Bool {
        guard let recent = self.entries[userID], recent.issuedAt == issuedAt else { return false }
        return (0..<Self.reuseMilliseconds).contains(now.millisecondsSinceEpoch - recent.at.millisecondsSinceEpoch)
    }

    /// How many refreshes are remembered.
    package var count: Int { self.entries.count }
}
