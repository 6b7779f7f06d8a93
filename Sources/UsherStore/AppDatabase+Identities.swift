import UsherCore
import UsherProtocol

/// Who owns each identity (`identity` table, migration `v6-identities`): the store's half of linked identities.
extension AppDatabase {
    package func owner(of identity: Identity) async throws -> IdentityOwner? {
        try await self.writer.read { db in
            guard
                let userID = try db.fetchOne(
                    String.self,
                    sql: "SELECT user_id FROM identity WHERE provider = ? AND subject = ?",
                    arguments: [identity.provider, identity.subject]
                )
            else { return nil }
            return IdentityOwner(userID: userID, identities: try Self.identities(of: userID, in: db))
        }
    }

    package func ownsIdentities(_ userID: String) async throws -> Bool {
        try await self.writer.read { db in
            try db.fetchOne(
                Bool.self,
                sql: "SELECT EXISTS (SELECT 1 FROM identity WHERE user_id = ?)",
                arguments: [userID]
            ) ?? false
        }
    }

    /// A user's identities, in the order the user lists them.
    static func identities(of userID: String, in db: Connection) throws -> [Identity] {
        try db.fetchAll(
            sql: "SELECT provider, kind, subject FROM identity WHERE user_id = ? ORDER BY position",
            arguments: [userID]
        ) { try Identity(provider: $0[0], kind: $0[1], subject: $0[2]) }
    }

    /// Makes the rows of `user` exactly its identities. An identity that another user owns fails the statement, and
    /// with it the whole change: an identity never belongs to two users, whatever a race attempts.
    static func record(identitiesOf user: User, in db: Connection) throws {
        try Self.forgetIdentities(of: user.id, in: db)
        for (position, identity) in user.identities.enumerated() {
            try db.execute(
                sql: "INSERT INTO identity (provider, subject, kind, user_id, position) VALUES (?, ?, ?, ?, ?)",
                arguments: [identity.provider, identity.subject, identity.kind, user.id, position]
            )
        }
    }

    static func forgetIdentities(of userID: String, in db: Connection) throws {
        try db.execute(sql: "DELETE FROM identity WHERE user_id = ?", arguments: [userID])
    }
}
