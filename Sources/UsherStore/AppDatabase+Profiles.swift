import UsherCore
import UsherProtocol

/// Profiles: the migration that gives existing users theirs, and the profile a local account keeps.
extension AppDatabase {
    /// Migration `v8-profiles`: each existing user's profile is the email and name it had (nothing else was known).
    ///
    /// Part of a shipped migration: frozen with it.
    static func seedProfiles(_ db: Connection) throws {
        let update = try db.statement(sql: "UPDATE user SET profile = ? WHERE id = ?")
        try db.forEach(sql: "SELECT id, email, name FROM user WHERE email IS NOT NULL OR name IS NOT NULL") { row in
            var claims: [String: JSONValue] = [:]
            if let email = try row[1] as String? { claims["email"] = .string(email) }
            if let name = try row[2] as String? { claims["name"] = .string(name) }
            try update.run([UserClaims(claims).json, try row[0] as String])
        }
    }

    /// The profile the owner of a local account set (`update_profile`); empty when none, nil when the account is gone.
    package func localProfile(provider: String, id: String) async throws -> UserClaims? {
        try await self.writer.read { db in
            try db.fetchOne(
                String.self,
                sql: "SELECT profile FROM local_account WHERE provider = ? AND id = ?",
                arguments: [provider, id]
            ).map { UserClaims(storedJSON: $0) }
        }
    }
}

/// A local account's new profile (`update_profile`), written in the same transaction as the user's: a crash leaves
/// both as they were or both changed.
package struct LocalProfileWrite: DatabaseWrite, Hashable {
    package var provider: String
    package var accountID: String
    package var profile: UserClaims

    package init(provider: String, accountID: String, profile: UserClaims) {
        self.provider = provider
        self.accountID = accountID
        self.profile = profile
    }

    /// Fails the change when the account is gone.
    func perform(in db: Connection) throws {
        try db.execute(
            sql: "UPDATE local_account SET profile = ? WHERE provider = ? AND id = ?",
            arguments: [self.profile.json, self.provider, self.accountID]
        )
        guard db.changesCount == 1 else { throw ProviderError.invalidCredentials("the account no longer exists") }
    }
}
