import Dispatch

/// The store's one connection, used from async code: every access runs on a serial dispatch queue of its own, so the
/// blocking SQLite calls (and the `fsync` of a commit) never hold a thread of Swift's cooperative pool, as GRDB's
/// queues did not.
///
/// Writes are serialised on one connection. A database file also has a second connection for reads, on a queue of its
/// own, as GRDB's pool had: in WAL mode a read sees the last commit and never waits for the writer. Every login reads
/// (who owns the identity, an account's password hash) before it writes; on the writer's queue each such read waited
/// behind the `fsync` of the commit in flight, so concurrent logins ran one commit apart (issue 38: half the logins a
/// second of the release before). An in-memory database has one connection for both.
///
/// `@unchecked Sendable`: each connection is only ever touched on its queue, one block at a time; the properties are
/// immutable.
final class DatabaseWriter: @unchecked Sendable {
    private let connection: Connection
    private let queue: DispatchQueue
    /// The connection reads use, and its queue: the writer's own when there is no second connection.
    private let reader: Connection
    private let readQueue: DispatchQueue

    /// - Parameter reader: a second connection to the same database file, for reads only; nil: reads use `connection`.
    init(_ connection: Connection, reader: Connection? = nil) {
        self.connection = connection
        self.queue = DispatchQueue(label: "usher.store")
        self.reader = reader ?? connection
        self.readQueue = reader == nil ? self.queue : DispatchQueue(label: "usher.store.read")
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction: committed when it returns, rolled back when it throws.
    func write<Value: Sendable>(_ body: @escaping @Sendable (Connection) throws -> Value) async throws -> Value {
        try await self.run { connection in try connection.transaction(.immediate) { try body(connection) } }
    }

    /// Runs `body` in one read transaction: it sees one state of the database, whatever other connections commit.
    func read<Value: Sendable>(_ body: @escaping @Sendable (Connection) throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            self.readQueue.async {
                continuation.resume(with: Result { try self.reader.transaction(.deferred) { try body(self.reader) } })
            }
        }
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
