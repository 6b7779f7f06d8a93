import Dispatch
import Synchronization

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
/// Writes share commits (group commit): the writes that arrive while one is being committed wait, and the next block
/// on the queue runs them all in one transaction and one `fsync`, each in a savepoint of its own, so that one that
/// throws is undone alone and fails alone. The registry batches its own changes, but a login makes two writes: the
/// local provider stores its refresh grant before the registry commits the user, and with `synchronous = FULL` each
/// alone would cost an `fsync` (issue 38: 317 `fdatasync` for 256 logins over 16 connections).
///
/// `@unchecked Sendable`: each connection is only ever touched on its queue, one block at a time; the other stored
/// properties are immutable or behind their lock.
final class DatabaseWriter: @unchecked Sendable {
    private let connection: Connection
    private let queue: DispatchQueue
    /// Writes waiting for the next commit, in arrival order; the block that commits them is queued when the first
    /// arrives.
    private let waiting = Mutex<[QueuedWrite]>([])
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

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction, maybe shared with other writes that arrived meanwhile:
    /// returns once the transaction is committed; when `body` throws, what it wrote is rolled back (and nothing of the
    /// others) and the error rethrown.
    func write<Value: Sendable>(_ body: @escaping @Sendable (Connection) throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let value = ValueBox<Value>()
            let write = QueuedWrite(
                perform: { connection in value.value = try body(connection) },
                finish: { result in continuation.resume(with: result.map { value.value! }) }
            )
            let first = self.waiting.withLock { waiting in
                waiting.append(write)
                return waiting.count == 1
            }
            if first { self.queue.async { self.commitWaiting() } }
        }
    }

    /// How many writes wait for the next commit (for tests).
    var queuedWrites: Int { self.waiting.withLock { $0.count } }

    /// On the queue: commits every waiting write in one transaction; if the transaction itself fails (its `BEGIN`,
    /// a savepoint, the `COMMIT`), nothing of it is kept and each write is tried again in a transaction of its own.
    private func commitWaiting() {
        let batch = self.waiting.withLock { waiting in
            defer { waiting.removeAll(keepingCapacity: true) }
            return waiting
        }
        guard batch.count > 1 else {
            for write in batch {
                write.finish(
                    Result { try self.connection.transaction(.immediate) { try write.perform(self.connection) } }
                )
            }
            return
        }
        var outcomes: [Result<Void, any Error>] = []
        outcomes.reserveCapacity(batch.count)
        do {
            try self.connection.transaction(.immediate) {
                outcomes.removeAll(keepingCapacity: true)
                for write in batch {
                    try self.connection.execute(sql: "SAVEPOINT write")
                    do {
                        try write.perform(self.connection)
                        try self.connection.execute(sql: "RELEASE write")
                        outcomes.append(.success(()))
                    } catch {
                        try self.connection.execute(sql: "ROLLBACK TO write")
                        try self.connection.execute(sql: "RELEASE write")
                        outcomes.append(.failure(error))
                    }
                }
            }
        } catch {
            for write in batch {
                write.finish(
                    Result { try self.connection.transaction(.immediate) { try write.perform(self.connection) } }
                )
            }
            return
        }
        for (write, outcome) in zip(batch, outcomes) { write.finish(outcome) }
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

/// A write waiting for its commit: what it does in the transaction, and whom to tell how it ended.
private struct QueuedWrite: Sendable {
    let perform: @Sendable (Connection) throws -> Void
    let finish: @Sendable (Result<Void, any Error>) -> Void
}

/// A write's value, set on the queue before its caller is resumed.
private final class ValueBox<Value>: @unchecked Sendable {
    var value: Value?
}
