import UsherCore

extension AppDatabase {
    /// Migration `v4-email-nfc`: every local account gets the email key `EmailAddress.key` computes (NFC, then lower
    /// case), and its email (in the account, in its user, in its refresh grants) is stored composed (NFC).
    ///
    /// Two accounts of one provider whose emails are the same once normalised (registered as `josé@ex.com` composed
    /// and decomposed) both stay, with their ids, passwords, users, sessions and API keys. The older one (by
    /// `created_at`, then id) keeps the email: password logins with it reach that account, as the first one
    /// registered is the likelier owner. The younger one's key becomes `<key> <account id>`, which no valid email
    /// is (it has a space), so it cannot be registered again and a password login by email does not reach it; it
    /// stays reachable by its id: its API keys log in, its refresh token keeps working, and `usher remove` removes
    /// its user. An operator finds such accounts with `SELECT id, email FROM local_account WHERE email_key LIKE
    /// '% %'`.
    ///
    /// Part of a shipped migration: frozen with it. A later change of the key adds a migration of its own.
    static func normaliseLocalEmails(_ db: Connection) throws {
        let accounts = try db.fetchAll(
            sql: "SELECT id, provider, email FROM local_account ORDER BY provider, created_at, id"
        ) { row in (id: try row[0] as String, provider: try row[1] as String, email: try row[2] as String) }
        // Out of the way first, so that no key is ever held by two rows while they are rewritten: an id has no `@`,
        // so `#<id>` is no email's key.
        try db.execute(sql: "UPDATE local_account SET email_key = '#' || id")
        var taken: Set<[String]> = []
        for account in accounts {
            let (id, provider) = (account.id, account.provider)
            let email = EmailAddress.composed(account.email)
            var key = EmailAddress.key(email)
            if !taken.insert([provider, key]).inserted { key += " " + id }
            try db.execute(
                sql: "UPDATE local_account SET email = ?, email_key = ? WHERE id = ?",
                arguments: [email, key, id]
            )
            for table in ["user", "local_refresh_token"] {
                try db.execute(
                    sql: "UPDATE \(table) SET email = ? WHERE provider = ? AND subject = ? AND email IS NOT NULL",
                    arguments: [email, provider, id]
                )
            }
        }
    }
}
