import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// Migration `v8-profiles`: users from before profiles keep the email and name they had, as their profile; a local
/// account's profile starts empty and is kept by `updateLocalProfile`.
@Suite(.timeLimit(.minutes(1)))
struct ProfileMigrationTests {
    @Test func existingUsersGetTheirEmailAndNameAsTheirProfile() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let queue = try Connection(path: directory.file("usher.sqlite"))
        try AppDatabase.migrator.migrate(queue, upTo: "v5-login-throttle")
        try queue.write { db in
            for (id, email, name) in [("u_1", "ann@example.com", "Ann"), ("u_2", nil, "Svc"), ("u_3", nil, nil)] {
                try db.execute(
                    sql: """
                        INSERT INTO user (id, provider, subject, kind, email, name, state, added_generation,
                          created_at, active_generation) VALUES (?, 'local', ?, 'jwt', ?, ?, 'logged_out', 1, 1, 0)
                        """,
                    arguments: [id, id, email, name]
                )
            }
            try db.execute(
                sql: """
                    INSERT INTO local_account (id, provider, email, email_key, password_hash, created_at)
                    VALUES ('a1', 'local', 'bo@example.com', 'bo@example.com', 'hash', 1)
                    """
            )
        }
        queue.close()

        let database = try AppDatabase(path: directory.file("usher.sqlite"))
        let users = Dictionary(uniqueKeysWithValues: try await database.loadSessions().users.map { ($0.id, $0) })
        #expect(users["u_1"]?.profile.claims == ["email": "ann@example.com", "name": "Ann"])
        #expect(users["u_2"]?.profile.claims == ["name": "Svc"])
        #expect(users["u_3"]?.profile == .empty)
        #expect(users.values.allSatisfy { $0.customData == .empty })

        #expect(try await database.localProfile(provider: "local", id: "a1") == .empty)
        // update_profile's write goes with the user's change, in its transaction.
        let write = LocalProfileWrite(provider: "local", accountID: "a1", profile: UserClaims(["name": "Bo"]))
        try await database.commit(SessionChange(generation: nil, saved: [], deleted: [], pendingWrites: [write]))
        #expect(try await database.localProfile(provider: "local", id: "a1")?.claims == ["name": "Bo"])
        // An account that is gone fails the whole change.
        let gone = LocalProfileWrite(provider: "local", accountID: "gone", profile: UserClaims(["name": "X"]))
        await #expect(throws: ProviderError.self) {
            try await database.commit(SessionChange(generation: 7, saved: [], deleted: [], pendingWrites: [gone]))
        }
        #expect(try await database.loadSessions().generation == 0)
    }
}
