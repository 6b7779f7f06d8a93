import UsherCore

/// The local provider's half of `delete_user`: everything it keeps for one subject (the account with its password
/// hash, its API keys, its refresh grants), deleted in the transaction that removes the user from the device, so that
/// a crash leaves either the account and the user or neither.
package struct LocalAccountDeletion: DatabaseWrite, Hashable {
    package var provider: String
    /// The identity's subject: an account id (`email_password`, `api_key`), or the subject of an anonymous or outside
    /// identity (which has grants only).
    package var subject: String

    package init(provider: String, subject: String) {
        self.provider = provider
        self.subject = subject
    }

    func perform(in db: Connection) throws {
        let arguments: [any SQLArgument] = [self.provider, self.subject]
        try db.execute(sql: "DELETE FROM local_account WHERE provider = ? AND id = ?", arguments: arguments)
        try db.execute(sql: "DELETE FROM local_api_key WHERE provider = ? AND subject = ?", arguments: arguments)
        try db.execute(sql: "DELETE FROM local_refresh_token WHERE provider = ? AND subject = ?", arguments: arguments)
    }
}
