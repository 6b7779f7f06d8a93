import GRDB
import UsherCore
import UsherProtocol

/// Who owns each identity (`identity` table, migration `v6-identities`): the store's half of linked identities.
extension AppDatabase {
    package func owner(of identity: Identity) async throws -> IdentityOwner? {
        try await self.writer.read { db in
            guard
                let userID = try String.fetchOne(
                    db,
                    sql: "SELECT user_id FROM identity WHERE provider = ? AND subject = ?",
                    arguments: [identity.provider, identity.subject]
                )
            else { return nil }
            return IdentityOwner(userID: userID, identities: try Self.identities(of: userID, in: db))
        }
    }

    package func ownsIdentities(_ userID: String) async throws -> Bool {
        try await self.writer.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM identity WHERE user_id = ?)", arguments: [userID])
                ?? false
        }
    }

    /// A user's identities, in the order the user lists them.
    static func identities(of userID: String, in db: Database) throws -> [Identity] {
        try Row.fetchAll(
            db,
            sql: "SELECT provider, kind, subject FROM identity WHERE user_id = ? ORDER BY position",
            arguments: [userID]
        ).map { Identity(provider: $0["provider"], kind: $0["kind"], subject: $0["subject"]) }
    }

    /// Makes the rows of `user` exactly its identities. An identity that another user owns fails the statement, and
    /// with it the whole change: an identity never belongs to two users, whatever a race attempts.
    static func record(identitiesOf user: User, in db: Database) throws {
        try Self.forgetIdentities(of: user.id, in: db)
        for (position, identity) in user.identities.enumerated() {
            try db.execute(
                sql: "INSERT INTO identity (provider, subject, kind, user_id, position) VALUES (?, ?, ?, ?, ?)",
                arguments: [identity.provider, identity.subject, identity.kind, user.id, position]
            )
        }
    }

    static func forgetIdentities(of userID: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM identity WHERE user_id = ?", arguments: [userID])
    }
}
