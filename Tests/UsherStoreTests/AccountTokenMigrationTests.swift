import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// `v7-account-tokens`: accounts made before it are confirmed; tokens are kept as hashes, one per account and
/// purpose, and go with their account.
@Suite(.timeLimit(.minutes(1)))
struct AccountTokenMigrationTests {
    @Test func accountsFromBeforeTheMigrationAreConfirmed() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let queue = try Connection(path: directory.file("usher.sqlite"))
        try AppDatabase.migrator.migrate(queue, upTo: "v5-login-throttle")
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO local_account (id, provider, email, email_key, password_hash, created_at)
                    VALUES ('a1', 'local', 'ann@example.com', 'ann@example.com', 'hash', 1)
                    """
            )
        }
        queue.close()
        let database = try AppDatabase(path: directory.file("usher.sqlite"))
        #expect(try await database.localAccount(provider: "local", id: "a1")?.confirmed == true)
    }

    @Test func aNewTokenReplacesTheOldAndTokensGoWithTheirAccount() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let database = try AppDatabase(path: directory.file("usher.sqlite"))
        let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        let account = LocalAccount(id: "a1", email: "ann@example.com", passwordHash: "hash", createdAt: now)
        #expect(
            try await database.createUnconfirmedLocalAccount(
                provider: "local",
                account: account,
                tokenHash: Array(repeating: 1, count: 32),
                expiresAt: now.adding(milliseconds: 1000)
            )
        )
        #expect(try await database.localAccount(provider: "local", id: "a1")?.confirmed == false)
        // The same email again stores nothing.
        #expect(
            try await !database.createUnconfirmedLocalAccount(
                provider: "local",
                account: LocalAccount(id: "a2", email: "ANN@example.com", passwordHash: "hash", createdAt: now),
                tokenHash: Array(repeating: 9, count: 32),
                expiresAt: now.adding(milliseconds: 1000)
            )
        )
        #expect(
            try await database.storeAccountToken(
                provider: "local",
                accountID: "a1",
                purpose: .confirm,
                tokenHash: Array(repeating: 2, count: 32),
                expiresAt: now.adding(milliseconds: 1000)
            )
        )
        #expect(
            try await database.confirmLocalAccount(
                provider: "local",
                tokenHash: Array(repeating: 1, count: 32),
                now: now
            ) == nil
        )
        // Expired at its expiry; not at another provider.
        #expect(
            try await database.confirmLocalAccount(
                provider: "local",
                tokenHash: Array(repeating: 2, count: 32),
                now: now.adding(milliseconds: 1000)
            ) == nil
        )
        #expect(
            try await database.confirmLocalAccount(
                provider: "other",
                tokenHash: Array(repeating: 2, count: 32),
                now: now
            )
                == nil
        )
        let confirmed = try await database.confirmLocalAccount(
            provider: "local",
            tokenHash: Array(repeating: 2, count: 32),
            now: now
        )
        #expect(confirmed?.confirmed == true)
        #expect(try await database.localAccount(provider: "local", id: "a1")?.confirmed == true)

        // A reset token is deleted with its account (the lead's delete_user deletes accounts).
        _ = try await database.storeAccountToken(
            provider: "local",
            accountID: "a1",
            purpose: .reset,
            tokenHash: Array(repeating: 3, count: 32),
            expiresAt: now.adding(milliseconds: 1000)
        )
        let other = try Connection(path: directory.file("usher.sqlite"))
        try other.write { db in try db.execute(sql: "DELETE FROM local_account WHERE id = 'a1'") }
        other.close()
        #expect(
            try await database.account(
                provider: "local",
                tokenHash: Array(repeating: 3, count: 32),
                purpose: .reset,
                now: now
            )
                == nil
        )
        #expect(
            try await !database.storeAccountToken(
                provider: "local",
                accountID: "a1",
                purpose: .reset,
                tokenHash: Array(repeating: 4, count: 32),
                expiresAt: now.adding(milliseconds: 1000)
            )
        )
    }
}
