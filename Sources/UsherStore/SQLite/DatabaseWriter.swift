import Dispatch

/// The store's one connection, used from async code: every access runs on a serial dispatch queue of its own, so the
/// blocking SQLite calls (and the `fsync` of a commit) never hold a thread of Swift's cooperative pool, as GRDB's
/// queues did not.
///
/// Reads and writes are serialised. GRDB's pool let reads run beside the writer; the daemon answers its hot reads
/// from the published state and reads the database only to log in, look up accounts and start, so one connection is
/// enough (the figures of `make bench` held).
///
/// `@unchecked Sendable`: the connection is only ever touched on `queue`, one block at a time; the other two
/// properties are immutable.
final class DatabaseWriter: @unchecked Sendable {
    private let connection: Connection
    private let queue: DispatchQueue

    init(_ connection: Connection) {
        self.connection = connection
        self.queue = DispatchQueue(label: "usher.store")
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction: committed when it returns, rolled back when it throws.
    func write<Value: Sendable>(_ body: @escaping @Sendable (Connection) throws -> Value) async throws -> Value {
        try await self.run { connection in try connection.transaction(.immediate) { try body(connection) } }
    }

    /// Runs `body` in one read transaction: it sees one state of the database, whatever other connections commit.
    func read<Value: Sendable>(_ body: @escaping @Sendable (Connection) throws -> Value) async throws -> Value {
        try await self.run { connection in try connection.transaction(.deferred) { try body(connection) } }
    }

    /// Copies the write-ahead log into the database file and truncates the log to nothing (`wal_checkpoint(TRUNCATE)`),
    /// outside any transaction: a secret a commit deleted is then gone from the `-wal` file too, where the frames of
    /// the commits that wrote it would otherwise keep it until SQLite's next automatic checkpoint. A reader of
    /// another connection (an operator's `sqlite3`) can keep the checkpoint from finishing; it is done again after
    /// the next deletion.
    func checkpoint() async throws {
        try await self.run { connection in try connection.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// Not cancelled with its task: a write handed to SQLite finishes (or fails) as a whole, and its caller is told.
    private func run<Value: Sendable>(_ body: @escaping @Sendable (Connection) throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            self.queue.async {
                continuation.resume(with: Result { try body(self.connection) })
            }
        }
    }
}
