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

/// Every record a logger wrote, with its level, for tests that check what an operator would see.
final class LogRecorder: Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let records = Mutex<[Record]>([])

    var logger: Logger {
        Logger(label: "usher.tests") { _ in Handler(recorder: self) }
    }

    var all: [Record] { self.records.withLock { $0 } }

    fileprivate func append(_ record: Record) {
        self.records.withLock { $0.append(record) }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { self.metadata[key] }
            set { self.metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = self.metadata.merging(event.metadata ?? [:]) { _, new in new }
            self.recorder.append(
                Record(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" })
            )
        }
    }
}
