import GRDB

extension AppDatabase {
    /// The schema's history. Frozen once shipped: add a migration, never edit one.
    package static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "meta") { t in
                t.primaryKey("key", .text)
                t.column("value", .integer).notNull()
            }
            try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('generation', 0)")
            try db.create(table: "user") { t in
                t.primaryKey("id", .text)
                t.column("provider", .text).notNull()
                t.column("subject", .text).notNull()
                t.column("kind", .text).notNull()
                t.column("email", .text)
                t.column("name", .text)
                t.column("state", .text).notNull()
                t.column("added_generation", .integer).notNull()
                t.column("created_at", .integer).notNull()
                t.column("last_login_at", .integer)
                t.column("last_active_at", .integer)
                t.column("active_generation", .integer).notNull()
                t.column("access_token", .text)
                t.column("access_token_issued_at", .integer)
                t.column("access_token_expires_at", .integer)
                t.column("refresh_token", .text)
                t.column("refresh_token_expires_at", .integer)
                t.column("provider_data", .text)
            }
            try db.create(table: "local_account") { t in
                t.primaryKey("id", .text)
                t.column("provider", .text).notNull()
                t.column("email", .text).notNull()
                t.column("email_key", .text).notNull()
                t.column("password_hash", .text).notNull()
                t.column("created_at", .integer).notNull()
                t.uniqueKey(["provider", "email_key"])
            }
            try db.create(table: "local_refresh_token") { t in
                t.primaryKey("token_hash", .blob)
                t.column("provider", .text).notNull()
                t.column("subject", .text).notNull()
                t.column("kind", .text).notNull()
                t.column("email", .text)
                t.column("session_started_at", .integer).notNull()
                t.column("expires_at", .integer).notNull()
            }
            try db.create(index: "local_refresh_token_expiry", on: "local_refresh_token", columns: ["expires_at"])
            try db.create(table: "local_api_key") { t in
                t.column("provider", .text).notNull()
                t.column("subject", .text).notNull()
                t.column("name", .text).notNull()
                t.column("key_hash", .blob).notNull().unique()
                t.column("created_at", .integer).notNull()
                t.primaryKey(["provider", "subject", "name"])
            }
        }
        migrator.registerMigration("v2-user-order") { db in
            // `loadSessions` reads every user in the order they were added: without an index SQLite sorts the whole
            // table (the rows with their tokens) in a temporary file at every start, most of the load's time with
            // 100,000 users.
            try db.create(index: "user_added_generation", on: "user", columns: ["added_generation"])
        }
        migrator.registerMigration("v3-seats") { db in
            // Each seat's active user (issue 14). Before it, the one active user was the most recently active one;
            // an empty table means that (see `loadSessions`). A row with a null user is a seat known to have none.
            try db.create(table: "seat") { t in
                t.primaryKey("name", .text)
                t.column("user_id", .text)
            }
        }
        migrator.registerMigration("v4-email-nfc") { db in
            // Issue 26: emails are keyed NFC, then lower case (`EmailAddress.key`); before, only lower case, so
            // `josé@ex.com` typed composed and decomposed were two accounts. Existing accounts get the new key.
            try Self.normaliseLocalEmails(db)
        }
        return migrator
    }
}
