import Foundation
import GRDB

/// The daemon's database: session state and the local provider's accounts, in one SQLite file.
///
/// Opened in WAL mode with `synchronous = FULL`, so a write that returned is on disk. Every change the registry
/// makes is one write transaction. Migrations are frozen once shipped: add new ones, never edit old ones.
package struct AppDatabase: Sendable {
    /// Internal, not private: the extensions by concern (`AppDatabase+*.swift`) use them.
    let writer: any DatabaseWriter
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
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        configuration.busyMode = .timeout(10)
        let pool = try DatabasePool(path: path, configuration: configuration)
        try self.init(writer: pool, cipher: cipher)
    }

    /// An in-memory database, for tests.
    package static func inMemory() throws -> AppDatabase {
        try AppDatabase(writer: DatabaseQueue(), cipher: nil)
    }

    private init(writer: any DatabaseWriter, cipher: TokenCipher?) throws {
        self.writer = writer
        self.cipher = cipher
        try Self.migrator.migrate(writer)
    }

    /// Whether the database file passes SQLite's integrity check.
    package func integrityCheck() async throws -> String {
        try await self.writer.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "" }
    }
}

package enum StoreError: Error, CustomStringConvertible {
    case cannotOpen(path: String, reason: String)
    case tokenKey(path: String, reason: String)
    case tokensEncrypted
    case wrongTokenKey
    /// A `SessionChange` carried a pending write of a type this store does not know (a programming error).
    case unsupportedWrite(String)

    package var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open database \(path): \(reason)"
        case .tokenKey(let path, let reason): "token encryption key \(path): \(reason)"
        case .tokensEncrypted:
            "the stored tokens are encrypted, but no daemon.token_encryption_key is configured"
        case .wrongTokenKey: "the stored tokens cannot be decrypted with the configured daemon.token_encryption_key"
        case .unsupportedWrite(let type): "the database cannot perform a pending write of type \(type)"
        }
    }
}
