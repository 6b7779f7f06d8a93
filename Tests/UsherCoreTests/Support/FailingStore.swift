import Logging
import Synchronization
import UsherCore
import UsherStore

/// A `SessionStore` over a real database whose commits fail on demand, as a full disk or an I/O error would make
/// them: the change is not written at all (the database never sees it).
final class FailingStore: SessionStore {
    struct DiskFull: Error, CustomStringConvertible {
        var description: String { "disk I/O error (simulated)" }
    }

    private let database: AppDatabase
    private let failures = Mutex((remaining: 0, failed: 0))

    init(_ database: AppDatabase) {
        self.database = database
    }

    /// Makes the next `count` commits fail.
    func failNextCommits(_ count: Int) {
        self.failures.withLock { $0.remaining = count }
    }

    /// How many commits failed so far.
    var failedCommits: Int { self.failures.withLock { $0.failed } }

    func loadSessions() async throws -> PersistedSessions {
        try await self.database.loadSessions()
    }

    func commit(_ change: SessionChange) async throws {
        let fail = self.failures.withLock { state in
            guard state.remaining > 0 else { return false }
            state.remaining -= 1
            state.failed += 1
            return true
        }
        if fail { throw DiskFull() }
        try await self.database.commit(change)
    }
}
