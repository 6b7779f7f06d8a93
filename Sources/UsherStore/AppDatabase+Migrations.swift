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
        migrator.registerMigration("v5-login-throttle") { db in
            // The login throttle's counts and lockouts (issue 26): a restart must neither lift a lockout nor give a
            // guesser a fresh budget. `key` is the throttle's: a peer uid, or one side (the owner's, the others') of
            // an account. Times are wall-clock milliseconds.
            try db.create(table: "login_failure") { t in
                t.primaryKey("key", .text)
                t.column("failures", .integer).notNull()
                t.column("last_failure_at", .integer).notNull()
                t.column("blocked_until", .integer).notNull()
            }
            // Each account's owner (the uid of its last successful login or its registration), whose own failures are
            // counted apart from everyone else's.
            try db.create(table: "login_owner") { t in
                t.primaryKey("account", .text)
                t.column("uid", .integer).notNull()
                t.column("since", .integer).notNull()
            }
            try db.create(index: "login_owner_since", on: "login_owner", columns: ["since"])
        }
        migrator.registerMigration("v6-identities") { db in
            // Linked identities (issue 21). `identity` says who owns each (provider, subject), for users on the device
            // and for users removed from it alike, so that logging in again with any identity of a user finds its id;
            // the primary key makes an identity belong to one user at most, whatever a race or a bug attempts. Each
            // existing user gets its one identity. `user.linked_identities` counts a user's identities besides the
            // session's, so that loading reads the identity rows of linked users only; `session_uid` is the peer uid
            // that opened the session (`delete_user` lets it delete the account).
            try db.create(table: "identity") { t in
                t.column("provider", .text).notNull()
                t.column("subject", .text).notNull()
                t.column("kind", .text).notNull()
                t.column("user_id", .text).notNull()
                t.column("position", .integer).notNull()
                t.primaryKey(["provider", "subject"])
            }
            try db.create(index: "identity_user", on: "identity", columns: ["user_id"])
            try db.execute(
                sql:
                    "INSERT INTO identity (provider, subject, kind, user_id, position) SELECT provider, subject, kind, id, 0 FROM user"
            )
            try db.alter(table: "user") { t in
                t.add(column: "linked_identities", .integer).notNull().defaults(to: 0)
                t.add(column: "session_uid", .integer)
            }
        }
        migrator.registerMigration("v7-account-tokens") { db in
            // Issue 21, passwords: local accounts can wait for a confirmation (`confirm = "hook"`); every account made
            // before this was confirmed by being made.
            try db.alter(table: "local_account") { t in
                t.add(column: "confirmed", .boolean).notNull().defaults(to: true)
            }
            // Confirmation and password-reset tokens: only their SHA-256, single-use (deleted when used), one per
            // account and purpose (a new one replaces the old), gone with their account.
            try db.create(table: "local_account_token") { t in
                t.primaryKey("token_hash", .blob)
                t.column("account_id", .text).notNull().references("local_account", onDelete: .cascade)
                t.column("purpose", .text).notNull()
                t.column("expires_at", .integer).notNull()
                t.uniqueKey(["account_id", "purpose"])
            }
        }
        migrator.registerMigration("v8-profiles") { db in
            // Issue 21, part 4: each user's profile and custom data (canonical JSON objects, `UserClaims`), and the
            // profile a local account's owner edits (`update_profile`). Depends on no other migration of the issue.
            try db.alter(table: "user") { t in
                t.add(column: "profile", .text).notNull().defaults(to: "{}")
                t.add(column: "custom_data", .text).notNull().defaults(to: "{}")
            }
            try db.alter(table: "local_account") { t in
                t.add(column: "profile", .text).notNull().defaults(to: "{}")
            }
            // Existing users get the profile they had: their email and name.
            try Self.seedProfiles(db)
        }
        migrator.registerMigration("v9-dpop-keys") { db in
            // Issue 24, part 3: the private key a session's tokens are bound to (DPoP), sealed like the tokens. It is a
            // column of the user's row, so it is written in the same transaction as the tokens it binds.
            try db.alter(table: "user") { t in
                t.add(column: "dpop_key", .text)
            }
        }
        return migrator
    }
}
