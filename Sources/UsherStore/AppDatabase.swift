import Foundation
import GRDB
import UsherCore
import UsherProtocol

/// The daemon's database: session state and the local provider's accounts, in one SQLite file.
///
/// Opened in WAL mode with `synchronous = FULL`, so a write that returned is on disk. Every change the registry
/// makes is one write transaction. Migrations are frozen once shipped: add new ones, never edit old ones.
package struct AppDatabase: Sendable {
    private let writer: any DatabaseWriter
    /// Seals session secrets at rest, when configured.
    private let cipher: TokenCipher?

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

    package static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "meta") { t in
                t.primaryKey("key", .text)
                t.column("value", .integer).notNull()
            }
            try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('generation', 0)")
            try db.create(table: "user") { t in
                t.primaryKey("id", .text)
                t.column("provider", .text).notNull()
                t.column("subject", .text).notNull()
                t.column("kind", .text).notNull()
                t.column("email", .text)
                t.column("name", .text)
                t.column("state", .text).notNull()
                t.column("added_generation", .integer).notNull()
                t.column("created_at", .integer).notNull()
                t.column("last_login_at", .integer)
                t.column("last_active_at", .integer)
                t.column("active_generation", .integer).notNull()
                t.column("access_token", .text)
                t.column("access_token_issued_at", .integer)
                t.column("access_token_expires_at", .integer)
                t.column("refresh_token", .text)
                t.column("refresh_token_expires_at", .integer)
                t.column("provider_data", .text)
            }
            try db.create(table: "local_account") { t in
                t.primaryKey("id", .text)
                t.column("provider", .text).notNull()
                t.column("email", .text).notNull()
                t.column("email_key", .text).notNull()
                t.column("password_hash", .text).notNull()
                t.column("created_at", .integer).notNull()
                t.uniqueKey(["provider", "email_key"])
            }
            try db.create(table: "local_refresh_token") { t in
                t.primaryKey("token_hash", .blob)
                t.column("provider", .text).notNull()
                t.column("subject", .text).notNull()
                t.column("kind", .text).notNull()
                t.column("email", .text)
                t.column("session_started_at", .integer).notNull()
                t.column("expires_at", .integer).notNull()
            }
            try db.create(index: "local_refresh_token_expiry", on: "local_refresh_token", columns: ["expires_at"])
            try db.create(table: "local_api_key") { t in
                t.column("provider", .text).notNull()
                t.column("subject", .text).notNull()
                t.column("name", .text).notNull()
                t.column("key_hash", .blob).notNull().unique()
                t.column("created_at", .integer).notNull()
                t.primaryKey(["provider", "subject", "name"])
            }
        }
        return migrator
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

// MARK: - Session state

extension AppDatabase: SessionStore {
    package func loadSessions() async throws -> PersistedSessions {
        try await self.writer.read { db in
            let generation = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'generation'") ?? 0
            let users = try Row.fetchAll(db, sql: "SELECT * FROM user ORDER BY added_generation").map {
                try Self.user($0, cipher: self.cipher)
            }
            return PersistedSessions(generation: generation, users: users)
        }
    }

    package func commit(_ change: SessionChange) async throws {
        let cipher = self.cipher
        @Sendable func sealed(_ value: String?) throws -> String? { try cipher.map { try $0.seal(value) } ?? value }
        try await self.writer.write { db in
            // First, so that a pending write that cannot be done (its grant is gone) fails the change before anything
            // else is written; any error rolls the whole transaction back.
            for write in change.pendingWrites {
                guard let write = write as? any DatabaseWrite else {
                    throw StoreError.unsupportedWrite(String(describing: type(of: write)))
                }
                try write.perform(in: db)
            }
            if let generation = change.generation {
                try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'generation'", arguments: [generation])
            }
            for id in change.deleted {
                try db.execute(sql: "DELETE FROM user WHERE id = ?", arguments: [id])
            }
            for user in change.saved {
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO user (id, provider, subject, kind, email, name, state, added_generation,
                          created_at, last_login_at, last_active_at, active_generation, access_token,
                          access_token_issued_at, access_token_expires_at, refresh_token, refresh_token_expires_at,
                          provider_data)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        user.id, user.provider, user.subject, user.kind, user.email, user.name, user.state.rawValue,
                        user.addedGeneration, user.createdAt.millisecondsSinceEpoch,
                        user.lastLoginAt?.millisecondsSinceEpoch, user.lastActiveAt?.millisecondsSinceEpoch,
                        user.activeGeneration, try sealed(user.tokens?.accessToken),
                        user.tokens?.issuedAt.millisecondsSinceEpoch, user.tokens?.expiresAt.millisecondsSinceEpoch,
                        try sealed(user.tokens?.refreshToken), user.tokens?.refreshExpiresAt?.millisecondsSinceEpoch,
                        try sealed(user.providerData),
                    ]
                )
            }
        }
    }

    private static func timestamp(_ row: Row, _ column: String) -> Timestamp? {
        (row[column] as Int64?).map { Timestamp(millisecondsSinceEpoch: $0) }
    }

    private static func user(_ row: Row, cipher: TokenCipher?) throws -> User {
        func opened(_ column: String) throws -> String? {
            try (row[column] as String?).map { stored throws(StoreError) in try TokenCipher.open(stored, with: cipher) }
        }
        var tokens: TokenSet? = nil
        if let accessToken = try opened("access_token"), let issuedAt = Self.timestamp(row, "access_token_issued_at"),
            let expiresAt = Self.timestamp(row, "access_token_expires_at")
        {
            tokens = TokenSet(
                accessToken: accessToken,
                issuedAt: issuedAt,
                expiresAt: expiresAt,
                refreshToken: try opened("refresh_token"),
                refreshExpiresAt: Self.timestamp(row, "refresh_token_expires_at")
            )
        }
        let state = User.State(rawValue: row["state"]) ?? .loggedOut
        return User(
            id: row["id"],
            provider: row["provider"],
            subject: row["subject"],
            kind: row["kind"],
            email: row["email"],
            name: row["name"],
            state: tokens == nil ? .loggedOut : state,
            addedGeneration: row["added_generation"],
            createdAt: Self.timestamp(row, "created_at") ?? Timestamp(millisecondsSinceEpoch: 0),
            lastLoginAt: Self.timestamp(row, "last_login_at"),
            lastActiveAt: Self.timestamp(row, "last_active_at"),
            activeGeneration: row["active_generation"],
            tokens: tokens,
            providerData: try opened("provider_data")
        )
    }
}

// MARK: - Local provider accounts

/// A local email/password account.
package struct LocalAccount: Sendable, Hashable {
    package var id: String
    package var email: String
    package var passwordHash: String
    package var createdAt: Timestamp

    package init(id: String, email: String, passwordHash: String, createdAt: Timestamp) {
        self.id = id
        self.email = email
        self.passwordHash = passwordHash
        self.createdAt = createdAt
    }
}

/// What the local provider remembers about a refresh token it issued (never the token itself, only its hash).
package struct LocalRefreshGrant: Sendable, Hashable {
    package var subject: String
    package var kind: String
    package var email: String?
    package var sessionStartedAt: Timestamp
    package var expiresAt: Timestamp

    package init(subject: String, kind: String, email: String?, sessionStartedAt: Timestamp, expiresAt: Timestamp) {
        self.subject = subject
        self.kind = kind
        self.email = email
        self.sessionStartedAt = sessionStartedAt
        self.expiresAt = expiresAt
    }
}

extension AppDatabase {
    /// Creates an account. Returns false when one with the same email (case-insensitively) exists.
    package func createLocalAccount(provider: String, account: LocalAccount) async throws -> Bool {
        try await self.writer.write { db in
            let emailKey = account.email.lowercased()
            let exists =
                try Bool.fetchOne(
                    db,
                    sql: "SELECT 1 FROM local_account WHERE provider = ? AND email_key = ?",
                    arguments: [provider, emailKey]
                ) ?? false
            if exists { return false }
            try db.execute(
                sql: """
                    INSERT INTO local_account (id, provider, email, email_key, password_hash, created_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    account.id, provider, account.email, emailKey, account.passwordHash,
                    account.createdAt.millisecondsSinceEpoch,
                ]
            )
            return true
        }
    }

    package func localAccount(provider: String, email: String) async throws -> LocalAccount? {
        try await self.writer.read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT * FROM local_account WHERE provider = ? AND email_key = ?",
                arguments: [provider, email.lowercased()]
            ).map(Self.account)
        }
    }

    package func localAccount(provider: String, id: String) async throws -> LocalAccount? {
        try await self.writer.read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT * FROM local_account WHERE provider = ? AND id = ?",
                arguments: [provider, id]
            ).map(Self.account)
        }
    }

    private static func account(_ row: Row) -> LocalAccount {
        LocalAccount(
            id: row["id"],
            email: row["email"],
            passwordHash: row["password_hash"],
            createdAt: Timestamp(millisecondsSinceEpoch: row["created_at"])
        )
    }

    package func storeRefreshGrant(provider: String, tokenHash: [UInt8], grant: LocalRefreshGrant) async throws {
        try await self.writer.write { db in
            try Self.insert(db, provider: provider, tokenHash: tokenHash, grant: grant)
        }
    }

    private static func insert(_ db: Database, provider: String, tokenHash: [UInt8], grant: LocalRefreshGrant) throws {
        try db.execute(
            sql: """
                INSERT INTO local_refresh_token (token_hash, provider, subject, kind, email, session_started_at,
                  expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                Data(tokenHash), provider, grant.subject, grant.kind, grant.email,
                grant.sessionStartedAt.millisecondsSinceEpoch, grant.expiresAt.millisecondsSinceEpoch,
            ]
        )
    }

    /// The grant of a refresh token, if it exists and is unexpired at `now`. Read-only: a refresh consumes the grant
    /// only when its new tokens are committed (`LocalGrantRotation`).
    package func refreshGrant(provider: String, tokenHash: [UInt8], now: Timestamp) async throws -> LocalRefreshGrant? {
        try await self.writer.read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT * FROM local_refresh_token WHERE token_hash = ? AND provider = ? AND expires_at > ?",
                arguments: [Data(tokenHash), provider, now.millisecondsSinceEpoch]
            ).map {
                LocalRefreshGrant(
                    subject: $0["subject"],
                    kind: $0["kind"],
                    email: $0["email"],
                    sessionStartedAt: Timestamp(millisecondsSinceEpoch: $0["session_started_at"]),
                    expiresAt: Timestamp(millisecondsSinceEpoch: $0["expires_at"])
                )
            }
        }
    }

    /// Deletes a refresh grant. Returns whether it existed.
    package func revokeRefreshGrant(provider: String, tokenHash: [UInt8]) async throws -> Bool {
        try await self.writer.write { db in
            try db.execute(
                sql: "DELETE FROM local_refresh_token WHERE token_hash = ? AND provider = ?",
                arguments: [Data(tokenHash), provider]
            )
            return db.changesCount > 0
        }
    }

    /// Deletes expired refresh grants; returns how many.
    package func purgeExpiredRefreshGrants(now: Timestamp) async throws -> Int {
        try await self.writer.write { db in
            try db.execute(
                sql: "DELETE FROM local_refresh_token WHERE expires_at <= ?",
                arguments: [now.millisecondsSinceEpoch]
            )
            return db.changesCount
        }
    }

    /// Creates an API key record. Returns false when the subject has a key of that name already.
    package func createAPIKey(
        provider: String,
        subject: String,
        name: String,
        keyHash: [UInt8],
        createdAt: Timestamp
    ) async throws -> Bool {
        try await self.writer.write { db in
            let exists =
                try Bool.fetchOne(
                    db,
                    sql: "SELECT 1 FROM local_api_key WHERE provider = ? AND subject = ? AND name = ?",
                    arguments: [provider, subject, name]
                ) ?? false
            if exists { return false }
            try db.execute(
                sql: "INSERT INTO local_api_key (provider, subject, name, key_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [provider, subject, name, Data(keyHash), createdAt.millisecondsSinceEpoch]
            )
            return true
        }
    }

    package func apiKeys(provider: String, subject: String) async throws -> [APIKeyInfo] {
        try await self.writer.read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT name, created_at FROM local_api_key WHERE provider = ? AND subject = ? ORDER BY created_at, name",
                arguments: [provider, subject]
            ).map { APIKeyInfo(name: $0["name"], createdAt: Timestamp(millisecondsSinceEpoch: $0["created_at"])) }
        }
    }

    package func deleteAPIKey(provider: String, subject: String, name: String) async throws -> Bool {
        try await self.writer.write { db in
            try db.execute(
                sql: "DELETE FROM local_api_key WHERE provider = ? AND subject = ? AND name = ?",
                arguments: [provider, subject, name]
            )
            return db.changesCount > 0
        }
    }

    /// The subject an API key belongs to, if the key exists.
    package func apiKeySubject(provider: String, keyHash: [UInt8]) async throws -> String? {
        try await self.writer.read { db in
            try String.fetchOne(
                db,
                sql: "SELECT subject FROM local_api_key WHERE provider = ? AND key_hash = ?",
                arguments: [provider, Data(keyHash)]
            )
        }
    }
}
