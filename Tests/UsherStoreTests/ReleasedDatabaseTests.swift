import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// A database usherd 0.1.0 made through GRDB (`Tests/Fixtures/databases/usherd-0.1.0-grdb.sqlite`: an email/password
/// account and an anonymous user, both logged in, migrated to `v9-dpop-keys`) opens with the SQLite layer that replaced
/// GRDB: nothing it has is migrated again, only the migrations added since run, everything loads, and it ends with
/// exactly the schema of a database made today.
@Suite(.timeLimit(.minutes(1)))
struct ReleasedDatabaseTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/databases/usherd-0.1.0-grdb.sqlite").path

    static let identifiers = [
        "v1", "v2-user-order", "v3-seats", "v4-email-nfc", "v5-login-throttle", "v6-identities", "v7-account-tokens",
        "v8-profiles", "v9-dpop-keys",
    ]
    /// The migrations added since 0.1.0 (issue 37), in the order they are registered.
    static let since = ["v11-session-bindings", "v12-unix-users", "v10-seat-pins"]

    /// Every table, index and trigger as SQLite keeps its definition.
    static func schema(_ path: String) throws -> [String] {
        let connection = try Connection(path: path)
        defer { connection.close() }
        return try connection.fetchAll(
            sql: "SELECT type, name, sql FROM sqlite_master ORDER BY type, name"
        ) { row in
            let (type, name, sql): (String, String, String?) = (try row[0], try row[1], try row[2])
            return "\(type) \(name): \(sql ?? "")"
        }
    }

    static func migrations(_ path: String) throws -> [String] {
        let connection = try Connection(path: path)
        defer { connection.close() }
        return try connection.fetchAll(String.self, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid")
    }

    @Test func aDatabaseGRDBMigratedOpensAsItIs() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let path = directory.file("usher.sqlite")
        try FileManager.default.copyItem(atPath: Self.fixture, toPath: path)
        #expect(try Self.migrations(path) == Self.identifiers)

        let database = try AppDatabase(path: path)
        // No migration ran again (v1's CREATE TABLE would have failed on the existing tables) and none was recorded
        // twice; those added since ran, and the schema is a new database's.
        #expect(try Self.migrations(path) == Self.identifiers + Self.since)
        let fresh = directory.file("fresh.sqlite")
        _ = try AppDatabase(path: fresh)
        #expect(try Self.schema(path) == Self.schema(fresh))
        #expect(try await database.integrityCheck() == "ok")

        let loaded = try await database.loadSessions()
        #expect(loaded.users.map(\.kind) == ["email_password", "anonymous"])
        #expect(loaded.users.allSatisfy { $0.state == .loggedIn && $0.tokens?.refreshToken != nil })
        #expect(loaded.users.first?.email == "ann@example.com")
        #expect(loaded.users.first?.profile.claims == ["email": "ann@example.com"])
        let account = try #require(try await database.localAccount(provider: "local", email: "ANN@example.com"))
        #expect(account.confirmed)
        #expect(account.passwordHash.hasPrefix("$"))
        #expect(try await database.owner(of: loaded.users[1].sessionIdentity)?.userID == loaded.users[1].id)
    }

    @Test func aNewDatabaseHasTheReleasedSchemaAndMigrationRecords() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let path = directory.file("usher.sqlite")
        _ = try AppDatabase(path: path)
        // A copy: opening the fixture in place would make its -wal and -shm files in the source tree.
        let released = directory.file("released.sqlite")
        try FileManager.default.copyItem(atPath: Self.fixture, toPath: released)
        _ = try AppDatabase(path: released)
        #expect(try Self.schema(path) == Self.schema(released))
        #expect(try Self.migrations(path) == Self.identifiers + Self.since)
    }

    @Test func theFileIsCreatedPrivateAndInWALMode() throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let path = directory.file("usher.sqlite")
        _ = try AppDatabase(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        let connection = try Connection(path: path)
        #expect(try connection.fetchOne(String.self, sql: "PRAGMA journal_mode") == "wal")
        #expect(try connection.fetchOne(Bool.self, sql: "PRAGMA foreign_keys") == true)
    }
}
