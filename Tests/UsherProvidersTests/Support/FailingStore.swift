import Synchronization
import UsherCore
import UsherStore

/// A `SessionStore` over a real database whose commits fail on demand, as a full disk or an I/O error would make
/// them: the change is not written at all. (UsherCoreTests has the same helper; test targets cannot share it without
/// making UsherTestSupport depend on UsherCore.)
final class FailingStore: SessionStore {
    struct DiskFull: Error, CustomStringConvertible {
        var description: String { "disk I/O error (simulated)" }
    }

    let database: AppDatabase
    private let remaining = Mutex(0)

    init(_ database: AppDatabase) {
        self.database = database
    }

    /// Makes the next `count` commits fail.
    func failNextCommits(_ count: Int) {
        self.remaining.withLock { $0 = count }
    }

    func loadSessions() async throws -> PersistedSessions {
        try await self.database.loadSessions()
    }

    func commit(_ change: SessionChange) async throws {
        let fail = self.remaining.withLock { remaining in
            guard remaining > 0 else { return false }
            remaining -= 1
            return true
        }
        if fail { throw DiskFull() }
        try await self.database.commit(change)
    }
}
