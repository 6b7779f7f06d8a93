import UsherProtocol

/// Where the login throttle keeps its failure counts, lockouts and account owners, so that a restart neither lifts a
/// lockout nor hands a guesser a fresh budget, and an account's owner is still known after it.
///
/// Times are wall-clock: the monotonic instants the throttle counts in mean nothing to the next process.
package protocol LoginThrottleStore: Sendable {
    /// Every count and owner stored, counts whose last failure is older than `forgottenBefore` (and that lock nothing
    /// out any more) left out and deleted; at most `maximumOwners` owners, the most recently recorded.
    func loadLoginThrottle(forgottenBefore: Timestamp, maximumOwners: Int) async throws -> LoginThrottleRecords

    /// Stores a change. `change` is called inside the write transaction, so that concurrent saves store the latest
    /// state whatever order they run in.
    func saveLoginThrottle(_ change: @escaping @Sendable () -> LoginThrottleRecords) async throws
}

/// Counts and owners as stored.
package struct LoginThrottleRecords: Sendable, Hashable {
    /// One count: `key` names the peer or the side of an account it counts (`LoginThrottle` encodes it). A count
    /// of zero deletes the row.
    package struct Count: Sendable, Hashable {
        package var key: String
        package var failures: Int
        package var lastFailure: Timestamp
        package var blockedUntil: Timestamp

        package init(key: String, failures: Int, lastFailure: Timestamp, blockedUntil: Timestamp) {
            self.key = key
            self.failures = failures
            self.lastFailure = lastFailure
            self.blockedUntil = blockedUntil
        }
    }

    /// An account's owner: the uid of its last successful login or its registration.
    package struct Owner: Sendable, Hashable {
        package var account: String
        package var uid: UInt32
        package var since: Timestamp

        package init(account: String, uid: UInt32, since: Timestamp) {
            self.account = account
            self.uid = uid
            self.since = since
        }
    }

    package var counts: [Count]
    package var owners: [Owner]

    package init(counts: [Count] = [], owners: [Owner] = []) {
        self.counts = counts
        self.owners = owners
    }
}
