import UsherCore
import UsherProtocol

/// A local email/password account.
package struct LocalAccount: Sendable, Hashable {
    package var id: String
    package var email: String
    package var passwordHash: String
    package var createdAt: Timestamp
    /// False while the account waits for its confirmation (`confirm = "hook"`); it cannot log in until then.
    package var confirmed: Bool

    package init(id: String, email: String, passwordHash: String, createdAt: Timestamp, confirmed: Bool = true) {
        self.id = id
        self.email = email
        self.passwordHash = passwordHash
        self.createdAt = createdAt
        self.confirmed = confirmed
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
    /// Creates an account. Returns false when one with the same email exists: the same once normalised
    /// (`EmailAddress.key`: canonically equivalent spellings, and case, do not matter).
    package func createLocalAccount(provider: String, account: LocalAccount) async throws -> Bool {
        try await self.writer.write { db in try Self.insert(db, provider: provider, account: account) }
    }

    /// `createLocalAccount` inside a transaction of the caller's.
    static func insert(_ db: Connection, provider: String, account: LocalAccount) throws -> Bool {
        let emailKey = EmailAddress.key(account.email)
        let exists =
            try db.fetchOne(
                Bool.self,
                sql: "SELECT 1 FROM local_account WHERE provider = ? AND email_key = ?",
                arguments: [provider, emailKey]
            ) ?? false
        if exists { return false }
        try db.execute(
            sql: """
                INSERT INTO local_account (id, provider, email, email_key, password_hash, created_at, confirmed)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                account.id, provider, account.email, emailKey, account.passwordHash,
                account.createdAt.millisecondsSinceEpoch, account.confirmed,
            ]
        )
        return true
    }

    /// The account with this email, in any canonically equivalent spelling and any case (`EmailAddress.key`).
    package func localAccount(provider: String, email: String) async throws -> LocalAccount? {
        try await self.writer.read { db in
            try db.fetchOne(
                sql: "SELECT * FROM local_account WHERE provider = ? AND email_key = ?",
                arguments: [provider, EmailAddress.key(email)]
            ) { try Self.account($0) }
        }
    }

    package func localAccount(provider: String, id: String) async throws -> LocalAccount? {
        try await self.writer.read { db in
            try db.fetchOne(
                sql: "SELECT * FROM local_account WHERE provider = ? AND id = ?",
                arguments: [provider, id]
            ) { try Self.account($0) }
        }
    }

    /// Replaces an account's password hash. Returns false when the account is gone.
    package func setLocalPassword(provider: String, id: String, passwordHash: String) async throws -> Bool {
        try await self.writer.write { db in
            try db.execute(
                sql: "UPDATE local_account SET password_hash = ? WHERE provider = ? AND id = ?",
                arguments: [passwordHash, provider, id]
            )
            return db.changesCount > 0
        }
    }

    /// An account from a row of `local_account` (`SELECT *`: read by name, whatever the order of the columns).
    static func account(_ row: Row) throws -> LocalAccount {
        LocalAccount(
            id: try row["id"],
            email: try row["email"],
            passwordHash: try row["password_hash"],
            createdAt: Timestamp(millisecondsSinceEpoch: try row["created_at"]),
            confirmed: try row["confirmed"]
        )
    }

    package func storeRefreshGrant(provider: String, tokenHash: [UInt8], grant: LocalRefreshGrant) async throws {
        try await self.writer.write { db in
            try Self.insert(db, provider: provider, tokenHash: tokenHash, grant: grant)
        }
    }

    private static func insert(_ db: Connection, provider: String, tokenHash: [UInt8], grant: LocalRefreshGrant) throws
    {
        try db.execute(
            sql: """
                INSERT INTO local_refresh_token (token_hash, provider, subject, kind, email, session_started_at,
                  expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                tokenHash, provider, grant.subject, grant.kind, grant.email,
                grant.sessionStartedAt.millisecondsSinceEpoch, grant.expiresAt.millisecondsSinceEpoch,
            ]
        )
    }

    /// The grant of a refresh token, if it exists and is unexpired at `now`. Read-only: a refresh consumes the grant
    /// only when its new tokens are committed (`LocalGrantRotation`).
    package func refreshGrant(provider: String, tokenHash: [UInt8], now: Timestamp) async throws -> LocalRefreshGrant? {
        try await self.writer.read { db in
            try db.fetchOne(
                sql: "SELECT * FROM local_refresh_token WHERE token_hash = ? AND provider = ? AND expires_at > ?",
                arguments: [tokenHash, provider, now.millisecondsSinceEpoch]
            ) {
                LocalRefreshGrant(
                    subject: try $0["subject"],
                    kind: try $0["kind"],
                    email: try $0["email"],
                    sessionStartedAt: Timestamp(millisecondsSinceEpoch: try $0["session_started_at"]),
                    expiresAt: Timestamp(millisecondsSinceEpoch: try $0["expires_at"])
                )
            }
        }
    }

    /// Deletes a refresh grant. Returns whether it existed.
    package func revokeRefreshGrant(provider: String, tokenHash: [UInt8]) async throws -> Bool {
        try await self.writer.write { db in
            try db.execute(
                sql: "DELETE FROM local_refresh_token WHERE token_hash = ? AND provider = ?",
                arguments: [tokenHash, provider]
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
                try db.fetchOne(
                    Bool.self,
                    sql: "SELECT 1 FROM local_api_key WHERE provider = ? AND subject = ? AND name = ?",
                    arguments: [provider, subject, name]
                ) ?? false
            if exists { return false }
            try db.execute(
                sql: "INSERT INTO local_api_key (provider, subject, name, key_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [provider, subject, name, keyHash, createdAt.millisecondsSinceEpoch]
            )
            return true
        }
    }

    package func apiKeys(provider: String, subject: String) async throws -> [APIKeyInfo] {
        try await self.writer.read { db in
            try db.fetchAll(
                sql:
                    "SELECT name, created_at FROM local_api_key WHERE provider = ? AND subject = ? ORDER BY created_at, name",
                arguments: [provider, subject]
            ) { APIKeyInfo(name: try $0[0], createdAt: Timestamp(millisecondsSinceEpoch: try $0[1])) }
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
            try db.fetchOne(
                String.self,
                sql: "SELECT subject FROM local_api_key WHERE provider = ? AND key_hash = ?",
                arguments: [provider, keyHash]
            )
        }
    }
}
