import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// Who owns each identity (migration `v6-identities`): existing users get their one identity, a removed user keeps
/// its identities, and no commit can give one identity two users.
@Suite(.timeLimit(.minutes(1)))
struct IdentityStoreTests {
    static func database() throws -> (TestDirectory, AppDatabase) {
        let directory = try TestDirectory()
        return (directory, try AppDatabase(path: directory.file("usher.sqlite")))
    }

    @Test func usersFromBeforeLinkingGetTheirOneIdentity() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let queue = try Connection(path: directory.file("usher.sqlite"))
        try AppDatabase.migrator.migrate(queue, upTo: "v5-login-throttle")
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO user (id, provider, subject, kind, email, state, added_generation, created_at,
                      active_generation) VALUES ('u_old', 'corp', 'sub-1', 'password', 'ann@ex.com', 'logged_out', 1,
                      1, 0)
                    """
            )
        }
        queue.close()
        let database = try AppDatabase(path: directory.file("usher.sqlite"))
        let owner = try await database.owner(of: Identity(provider: "corp", kind: "", subject: "sub-1"))
        #expect(
            owner
                == IdentityOwner(
                    userID: "u_old",
                    identities: [Identity(provider: "corp", kind: "password", subject: "sub-1")]
                )
        )
        let loaded = try await database.loadSessions()
        #expect(loaded.users.first?.identities.count == 1)
        #expect(loaded.users.first?.otherIdentities.isEmpty == true)
    }

    @Test func linkedIdentitiesLoadAndOutliveTheUsersRemoval() async throws {
        let (directory, database) = try Self.database()
        defer { directory.remove() }
        var ann = SessionStoreTests.user("ann")
        ann.otherIdentities = [Identity(provider: "local", kind: "anonymous", subject: "anonymous:1")]
        try await database.commit(SessionChange(generation: 1, saved: [ann], deleted: []))
        let loaded = try await database.loadSessions()
        #expect(loaded.users.first?.otherIdentities == ann.otherIdentities)
        #expect(loaded.users.first?.sessionIdentity == ann.sessionIdentity)

        // Removed from the device: the identities still say whose they are.
        try await database.commit(SessionChange(generation: 2, saved: [], deleted: [ann.id]))
        let guest = Identity(provider: "local", kind: "", subject: "anonymous:1")
        #expect(try await database.owner(of: guest)?.userID == ann.id)
        #expect(try await database.owner(of: guest)?.identities.count == 2)
        #expect(try await database.ownsIdentities(ann.id))

        // Forgotten (a deleted account): nobody owns them.
        var forget = SessionChange(generation: 3, saved: [], deleted: [])
        forget.forgottenIdentities = [ann.id]
        try await database.commit(forget)
        #expect(try await database.owner(of: guest) == nil)
        #expect(try await !database.ownsIdentities(ann.id))
    }

    @Test func anIdentityNeverBelongsToTwoUsers() async throws {
        let (directory, database) = try Self.database()
        defer { directory.remove() }
        let ann = SessionStoreTests.user("ann")
        try await database.commit(SessionChange(generation: 1, saved: [ann], deleted: []))
        var bob = SessionStoreTests.user("bob", added: 2)
        bob.otherIdentities = [ann.sessionIdentity]
        await #expect(throws: (any Error).self) {
            try await database.commit(SessionChange(generation: 2, saved: [bob], deleted: []))
        }
        // The whole change was rolled back: Bob is not there, and Ann still owns her identity.
        let loaded = try await database.loadSessions()
        #expect(loaded.users.map(\.id) == [ann.id])
        #expect(loaded.generation == 1)
        #expect(try await database.owner(of: ann.sessionIdentity)?.userID == ann.id)
    }
}
