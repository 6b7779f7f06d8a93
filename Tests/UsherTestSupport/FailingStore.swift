import Synchronization
import UsherCore
import UsherProtocol
import UsherStore

/// A `SessionStore` over a real database whose commits fail on demand, as a full disk or an I/O error would make
/// them: the change is not written at all (the database never sees it). It counts commits, and can hold one back
/// until the test releases it (a slow disk), so that changes queue up behind it.
///
/// Here, in the shared test support, so that the core's and the providers' tests use the one helper; it is why
/// this target depends on UsherCore and UsherStore, as every test target that uses it already does.
package final class FailingStore: SessionStore {
    private struct Hold {
        var armed = false
        var parked: CheckedContinuation<Void, Never>?
        var commits: [SessionChange] = []
    }

    private let hold = Mutex(Hold())

    /// Makes the next commit wait (once it has started) until `release()`.
    package func holdNextCommit() {
        self.hold.withLock { $0.armed = true }
    }

    /// Whether a held commit is waiting.
    package var isHolding: Bool { self.hold.withLock { $0.parked != nil } }

    package func release() {
        self.hold.withLock { hold -> CheckedContinuation<Void, Never>? in
            defer { hold.parked = nil }
            return hold.parked
        }?.resume()
    }

    /// Every commit that reached the database, in order.
    package var commits: [SessionChange] { self.hold.withLock { $0.commits } }

    package struct DiskFull: Error, CustomStringConvertible {
        package var description: String { "disk I/O error (simulated)" }
    }

    /// The database commits go to when they do not fail.
    package let database: AppDatabase
    private let failures = Mutex((remaining: 0, failed: 0))

    package init(_ database: AppDatabase) {
        self.database = database
    }

    /// Makes the next `count` commits fail.
    package func failNextCommits(_ count: Int) {
        self.failures.withLock { $0.remaining = count }
    }

    /// How many commits failed so far.
    package var failedCommits: Int { self.failures.withLock { $0.failed } }

    package func loadSessions() async throws -> PersistedSessions {
        try await self.database.loadSessions()
    }

    package func owner(of identity: Identity) async throws -> IdentityOwner? {
        try await self.database.owner(of: identity)
    }

    package func ownsIdentities(_ userID: String) async throws -> Bool {
        try await self.database.ownsIdentities(userID)
    }

    package func commit(_ change: SessionChange) async throws {
        let fail = self.failures.withLock { state in
            guard state.remaining > 0 else { return false }
            state.remaining -= 1
            state.failed += 1
            return true
        }
        if fail { throw DiskFull() }
        if self.hold.withLock({ hold in
            defer { hold.armed = false }
            return hold.armed
        }) {
            await withCheckedContinuation { continuation in self.hold.withLock { $0.parked = continuation } }
        }
        try await self.database.commit(change)
        self.hold.withLock { $0.commits.append(change) }
    }
}
