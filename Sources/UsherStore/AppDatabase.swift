#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon's database: session state and the local provider's accounts, in one SQLite file.
///
/// Opened in WAL mode with `synchronous = FULL`, so a write that returned is on disk. Every change the registry
/// makes is one write transaction. Migrations are frozen once shipped: add new ones, never edit old ones.
package struct AppDatabase: Sendable {
    /// Internal, not private: the extensions by concern (`AppDatabase+*.swift`) use it.
    let writer: DatabaseWriter
    /// Seals session secrets at rest, when configured.
    let cipher: TokenCipher?

    /// Opens (creating when needed, mode 0600) the database at `path` and migrates it.
    package init(path: String, cipher: TokenCipher? = nil) throws {
        // Create the file ourselves so it is 0600 from its first byte; SQLite gives the -wal and -shm files the same
        // mode as the database file.
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError.cannotOpen(path: path, reason: String(cString: strerror(errno)))
        }
        close(descriptor)
        let connection = try Connection(path: path)
        // WAL: readers (an operator's `sqlite3`) never block the daemon's writes, and a commit is one append and one
        // fsync. The mode is kept in the file; FULL syncs the WAL at every commit, so a returned write survives a
        // power cut, not only a crash.
        let mode = try connection.fetchOne(String.self, sql: "PRAGMA journal_mode = WAL")
        guard mode?.lowercased() == "wal" else {
            throw StoreError.cannotOpen(path: path, reason: "SQLite refused WAL mode (\(mode ?? "none"))")
        }
        try connection.execute(sql: "PRAGMA synchronous = FULL")
        // Deleted content is overwritten with zeros in the database file, whatever the SQLite library's build default
        // (Debian's is on; upstream's off); the -wal file is checkpointed after a secret is deleted (`commit`).
        try connection.execute(sql: "PRAGMA secure_delete = ON")
        try self.init(connection, cipher: cipher) {
            // Opened after the migrations, which it must see; refuses writes, so that only the writer ever writes.
            let reader = try Connection(path: path)
            try reader.execute(sql: "PRAGMA query_only = ON")
            return reader
        }
    }

    /// An in-memory database, for tests.
    package static func inMemory() throws -> AppDatabase {
        try AppDatabase(Connection(path: ":memory:"), cipher: nil)
    }

    /// - Parameter reader: opens the connection reads use, once the database is migrated; nil: reads use the writer's.
    private init(_ connection: Connection, cipher: TokenCipher?, reader: (() throws -> Connection)? = nil) throws {
        // Before the connection is shared: nothing else can use it yet.
        try Self.migrator.migrate(connection)
        self.writer = DatabaseWriter(connection, reader: try reader?())
        self.cipher = cipher
    }

    /// Whether the database file passes SQLite's integrity check.
    package func integrityCheck() async throws -> String {
        try await self.writer.read { db in try db.fetchOne(String.self, sql: "PRAGMA integrity_check") ?? "" }
    }
}
