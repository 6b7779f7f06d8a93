import UsherCore
import UsherProtocol

/// What a local account token is for: confirming the account, or setting its password without the current one.
package enum AccountTokenPurpose: String, Sendable, Hashable {
    case confirm
    case reset
}

/// Confirmation and password-reset tokens of local accounts (`local_account_token`).
///
/// A token is stored only as its SHA-256 (it is 256 random bits, so a fast hash is enough), with its account, its
/// purpose and its expiry. An account has at most one token of each purpose: a new one replaces the old, which stops
/// working. Using a token deletes it, in the transaction of what it does. Tokens go with their account.
extension AppDatabase {
    /// Creates an account that waits for its confirmation, together with its confirmation token, in one transaction.
    /// Returns false when an account with the same email exists (and stores nothing).
    package func createUnconfirmedLocalAccount(
        provider: String,
        account: LocalAccount,
        tokenHash: [UInt8],
        expiresAt: Timestamp
    ) async throws -> Bool {
        var account = account
        account.confirmed = false
        return try await self.writer.write { [account] db in
            guard try Self.insert(db, provider: provider, account: account) else { return false }
            try Self.replaceToken(
                db,
                accountID: account.id,
                purpose: .confirm,
                tokenHash: tokenHash,
                expiresAt: expiresAt
            )
            return true
        }
    }

    /// Stores a new token for an account, replacing its token of the same purpose. Returns false when the account is
    /// gone.
    package func storeAccountToken(
        provider: String,
        accountID: String,
        purpose: AccountTokenPurpose,
        tokenHash: [UInt8],
        expiresAt: Timestamp
    ) async throws -> Bool {
        try await self.writer.write { db in
            let exists =
                try db.fetchOne(
                    Bool.self,
                    sql: "SELECT 1 FROM local_account WHERE provider = ? AND id = ?",
                    arguments: [provider, accountID]
                ) ?? false
            guard exists else { return false }
            try Self.replaceToken(
                db,
                accountID: accountID,
                purpose: purpose,
                tokenHash: tokenHash,
                expiresAt: expiresAt
            )
            return true
        }
    }

    private static func replaceToken(
        _ db: Connection,
        accountID: String,
        purpose: AccountTokenPurpose,
        tokenHash: [UInt8],
        expiresAt: Timestamp
    ) throws {
        try db.execute(
            sql: "DELETE FROM local_account_token WHERE account_id = ? AND purpose = ?",
            arguments: [accountID, purpose.rawValue]
        )
        try db.execute(
            sql: "INSERT INTO local_account_token (token_hash, account_id, purpose, expires_at) VALUES (?, ?, ?, ?)",
            arguments: [tokenHash, accountID, purpose.rawValue, expiresAt.millisecondsSinceEpoch]
        )
    }

    /// The account of an unexpired token of this purpose, or nil. Read-only: using the token is a write of its own
    /// (`confirmLocalAccount`, `LocalPasswordReset`).
    package func account(
        provider: String,
        tokenHash: [UInt8],
        purpose: AccountTokenPurpose,
        now: Timestamp
    ) async throws -> LocalAccount? {
        try await self.writer.read { db in
            try db.fetchOne(
                sql: """
                    SELECT a.* FROM local_account_token t JOIN local_account a ON a.id = t.account_id
                    WHERE t.token_hash = ? AND t.purpose = ? AND t.expires_at > ? AND a.provider = ?
                    """,
                arguments: [tokenHash, purpose.rawValue, now.millisecondsSinceEpoch, provider]
            ) { try Self.account($0) }
        }
    }

    /// Confirms the account of an unexpired confirmation token and deletes the token, in one transaction. Returns the
    /// account, or nil when the token is unknown, used, replaced or expired.
    package func confirmLocalAccount(provider: String, tokenHash: [UInt8], now: Timestamp) async throws -> LocalAccount?
    {
        try await self.writer.write { db in
            guard
                var account = try db.fetchOne(
                    sql: """
                        SELECT a.* FROM local_account_token t JOIN local_account a ON a.id = t.account_id
                        WHERE t.token_hash = ? AND t.purpose = 'confirm' AND t.expires_at > ? AND a.provider = ?
                        """,
                    arguments: [tokenHash, now.millisecondsSinceEpoch, provider],
                    Self.account
                )
            else { return nil }
            try db.execute(sql: "DELETE FROM local_account_token WHERE token_hash = ?", arguments: [tokenHash])
            try db.execute(
                sql: "UPDATE local_account SET confirmed = 1 WHERE provider = ? AND id = ?",
                arguments: [provider, account.id]
            )
            account.confirmed = true
            return account
        }
    }

    /// Deletes expired tokens; returns how many.
    package func purgeExpiredAccountTokens(now: Timestamp) async throws -> Int {
        try await self.writer.write { db in
            try db.execute(
                sql: "DELETE FROM local_account_token WHERE expires_at <= ?",
                arguments: [now.millisecondsSinceEpoch]
            )
            return db.changesCount
        }
    }
}

/// A password set without the current one, deferred to the registry's commit of the sessions it ends
/// (`PasswordReset`): sets the hash, deletes the account's refresh grants and its reset token, and, for a reset by
/// token, consumes that token, which must still be unexpired (it then also confirms the account: the token reached
/// its mailbox). When the token or the account is gone, throws, and the whole change is rolled back.
package struct LocalPasswordReset: DatabaseWrite {
    package var provider: String
    package var accountID: String
    package var passwordHash: String
    /// The reset token being used, if the reset is by token.
    package var tokenHash: [UInt8]?
    package var now: Timestamp

    package init(provider: String, accountID: String, passwordHash: String, tokenHash: [UInt8]?, now: Timestamp) {
        self.provider = provider
        self.accountID = accountID
        self.passwordHash = passwordHash
        self.tokenHash = tokenHash
        self.now = now
    }

    func perform(in db: Connection) throws {
        if let tokenHash {
            try db.execute(
                sql: """
                    DELETE FROM local_account_token
                    WHERE token_hash = ? AND account_id = ? AND purpose = 'reset' AND expires_at > ?
                    """,
                arguments: [tokenHash, self.accountID, self.now.millisecondsSinceEpoch]
            )
            guard db.changesCount == 1 else { throw ProviderError.invalidToken(LocalPasswordReset.invalidToken) }
        }
        try db.execute(
            sql: """
                UPDATE local_account SET password_hash = ?, confirmed = CASE WHEN ? THEN 1 ELSE confirmed END
                WHERE provider = ? AND id = ?
                """,
            arguments: [self.passwordHash, self.tokenHash != nil, self.provider, self.accountID]
        )
        guard db.changesCount == 1 else {
            throw self.tokenHash == nil
                ? ProviderError.invalidCredentials("no account has this email")
                : ProviderError.invalidToken(LocalPasswordReset.invalidToken)
        }
        try db.execute(
            sql: "DELETE FROM local_account_token WHERE account_id = ? AND purpose = 'reset'",
            arguments: [self.accountID]
        )
        try db.execute(
            sql: "DELETE FROM local_refresh_token WHERE provider = ? AND subject = ?",
            arguments: [self.provider, self.accountID]
        )
    }

    /// The one message of every refused token: it never says which of unknown, used, replaced or expired.
    package static let invalidToken = "the token is unknown, used already, replaced by a newer one, or expired"
}
