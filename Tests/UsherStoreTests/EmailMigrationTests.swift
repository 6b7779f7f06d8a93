import Foundation
import Testing
import UsherStore
import UsherTestSupport

/// The migration that gives existing local accounts their normalised email key (NFC, then lower case), so that an
/// account registered before normalisation is found by the email in any canonically equivalent spelling, and two
/// accounts whose emails became one stay reachable.
@Suite(.timeLimit(.minutes(1)))
struct EmailMigrationTests {
    static let composed = "jos\u{E9}@ex.com"
    static let decomposed = "jose\u{301}@ex.com"

    /// A database file at the schema before the migration, holding `accounts` (id, email, created_at) of provider
    /// `local`, keyed as the daemon keyed them then (lower case, no normalisation).
    static func databaseBeforeNormalisation(_ accounts: [(String, String, Int64)]) throws -> TestDirectory {
        let directory = try TestDirectory()
        let queue = try Connection(path: directory.file("usher.sqlite"))
        try AppDatabase.migrator.migrate(queue, upTo: "v3-seats")
        try queue.write { db in
            for (id, email, createdAt) in accounts {
                try db.execute(
                    sql: """
                        INSERT INTO local_account (id, provider, email, email_key, password_hash, created_at)
                        VALUES (?, 'local', ?, ?, 'hash-\(id)', ?)
                        """,
                    arguments: [id, email, email.lowercased(), createdAt]
                )
                try db.execute(
                    sql: """
                        INSERT INTO user (id, provider, subject, kind, email, state, added_generation, created_at,
                          active_generation) VALUES (?, 'local', ?, 'email_password', ?, 'logged_out', ?, ?, 0)
                        """,
                    arguments: ["u_\(id)", id, email, createdAt, createdAt]
                )
            }
        }
        queue.close()
        return directory
    }

    @Test func anAccountRegisteredDecomposedIsFoundByEitherSpelling() async throws {
        let directory = try Self.databaseBeforeNormalisation([("a1", "JOSE\u{301}@ex.com", 1)])
        defer { directory.remove() }
        let database = try AppDatabase(path: directory.file("usher.sqlite"))
        for email in [Self.composed, Self.decomposed, "Jos\u{C9}@EX.com"] {
            #expect(try await database.localAccount(provider: "local", email: email)?.id == "a1")
        }
        // The email shown is composed too, in the account and in its user; its case is kept.
        let account = try #require(try await database.localAccount(provider: "local", id: "a1"))
        #expect(Array(account.email.utf8) == Array("JOS\u{C9}@ex.com".utf8))
        let shown = try Connection(path: directory.file("usher.sqlite")).read { db in
            try db.fetchOne(String.self, sql: "SELECT email FROM user WHERE id = 'u_a1'")
        }
        #expect(shown.map { Array($0.utf8) } == Array("JOS\u{C9}@ex.com".utf8))
    }

    @Test func twoAccountsThatBecomeOneEmailBothStay() async throws {
        let directory = try Self.databaseBeforeNormalisation([
            ("young", Self.composed, 20), ("old", Self.decomposed, 10), ("other", "ann@ex.com", 5),
        ])
        defer { directory.remove() }
        let database = try AppDatabase(path: directory.file("usher.sqlite"))
        // The older account keeps the email; the younger is still there, by its id.
        #expect(try await database.localAccount(provider: "local", email: Self.composed)?.id == "old")
        #expect(try await database.localAccount(provider: "local", email: Self.decomposed)?.id == "old")
        #expect(try await database.localAccount(provider: "local", id: "young")?.passwordHash == "hash-young")
        #expect(try await database.localAccount(provider: "local", email: "ann@ex.com")?.id == "other")
        #expect(try await database.integrityCheck() == "ok")
    }
}
