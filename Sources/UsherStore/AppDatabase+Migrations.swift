extension AppDatabase {
    /// The schema's history. Frozen once shipped: add a migration, never edit one.
    ///
    /// The statements are the ones GRDB's schema builder issued for these migrations when they shipped (usherd 0.1.0
    /// ran them through GRDB), word for word, so a database made today has the schema of one made then.
    package static var migrator: Migrator {
        var migrator = Migrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE "meta" ("key" TEXT PRIMARY KEY NOT NULL, "value" INTEGER NOT NULL);
                    INSERT INTO meta (key, value) VALUES ('generation', 0);
                    CREATE TABLE "user" ("id" TEXT PRIMARY KEY NOT NULL, "provider" TEXT NOT NULL, \
                    "subject" TEXT NOT NULL, "kind" TEXT NOT NULL, "email" TEXT, "name" TEXT, "state" TEXT NOT NULL, \
                    "added_generation" INTEGER NOT NULL, "created_at" INTEGER NOT NULL, "last_login_at" INTEGER, \
                    "last_active_at" INTEGER, "active_generation" INTEGER NOT NULL, "access_token" TEXT, \
                    "access_token_issued_at" INTEGER, "access_token_expires_at" INTEGER, "refresh_token" TEXT, \
                    "refresh_token_expires_at" INTEGER, "provider_data" TEXT);
                    CREATE TABLE "local_account" ("id" TEXT PRIMARY KEY NOT NULL, "provider" TEXT NOT NULL, \
                    "email" TEXT NOT NULL, "email_key" TEXT NOT NULL, "password_hash" TEXT NOT NULL, \
                    "created_at" INTEGER NOT NULL, UNIQUE ("provider", "email_key"));
                    CREATE TABLE "local_refresh_token" ("token_hash" BLOB PRIMARY KEY NOT NULL, \
                    "provider" TEXT NOT NULL, "subject" TEXT NOT NULL, "kind" TEXT NOT NULL, "email" TEXT, \
                    "session_started_at" INTEGER NOT NULL, "expires_at" INTEGER NOT NULL);
                    CREATE INDEX "local_refresh_token_expiry" ON "local_refresh_token"("expires_at");
                    CREATE TABLE "local_api_key" ("provider" TEXT NOT NULL, "subject" TEXT NOT NULL, \
                    "name" TEXT NOT NULL, "key_hash" BLOB NOT NULL UNIQUE, "created_at" INTEGER NOT NULL, \
                    PRIMARY KEY ("provider", "subject", "name"));
                    """
            )
        }
        migrator.registerMigration("v2-user-order") { db in
            // `loadSessions` reads every user in the order they were added: without an index SQLite sorts the whole
            // table (the rows with their tokens) in a temporary file at every start, most of the load's time with
            // 100,000 users.
            try db.execute(sql: #"CREATE INDEX "user_added_generation" ON "user"("added_generation")"#)
        }
        migrator.registerMigration("v3-seats") { db in
            // Each seat's active user (issue 14). Before it, the one active user was the most recently active one;
            // an empty table means that (see `loadSessions`). A row with a null user is a seat known to have none.
            try db.execute(sql: #"CREATE TABLE "seat" ("name" TEXT PRIMARY KEY NOT NULL, "user_id" TEXT)"#)
        }
        migrator.registerMigration("v4-email-nfc") { db in
            // Issue 26: emails are keyed NFC, then lower case (`EmailAddress.key`); before, only lower case, so
            // `josé@ex.com` typed composed and decomposed were two accounts. Existing accounts get the new key.
            try Self.normaliseLocalEmails(db)
        }
        migrator.registerMigration("v5-login-throttle") { db in
            // The login throttle's counts and lockouts (issue 26): a restart must neither lift a lockout nor give a
            // guesser a fresh budget. `key` is the throttle's: a peer uid, or one side (the owner's, the others') of
            // an account. Times are wall-clock milliseconds. Each account's owner (the uid of its last successful
            // login or its registration), whose own failures are counted apart from everyone else's.
            try db.execute(
                sql: """
                    CREATE TABLE "login_failure" ("key" TEXT PRIMARY KEY NOT NULL, "failures" INTEGER NOT NULL, \
                    "last_failure_at" INTEGER NOT NULL, "blocked_until" INTEGER NOT NULL);
                    CREATE TABLE "login_owner" ("account" TEXT PRIMARY KEY NOT NULL, "uid" INTEGER NOT NULL, \
                    "since" INTEGER NOT NULL);
                    CREATE INDEX "login_owner_since" ON "login_owner"("since");
                    """
            )
        }
        migrator.registerMigration("v6-identities") { db in
            // Linked identities (issue 21). `identity` says who owns each (provider, subject), for users on the device
            // and for users removed from it alike, so that logging in again with any identity of a user finds its id;
            // the primary key makes an identity belong to one user at most, whatever a race or a bug attempts. Each
            // existing user gets its one identity. `user.linked_identities` counts a user's identities besides the
            // session's, so that loading reads the identity rows of linked users only; `session_uid` is the peer uid
            // that opened the session (`delete_user` lets it delete the account).
            try db.execute(
                sql: """
                    CREATE TABLE "identity" ("provider" TEXT NOT NULL, "subject" TEXT NOT NULL, \
                    "kind" TEXT NOT NULL, "user_id" TEXT NOT NULL, "position" INTEGER NOT NULL, \
                    PRIMARY KEY ("provider", "subject"));
                    CREATE INDEX "identity_user" ON "identity"("user_id");
                    INSERT INTO identity (provider, subject, kind, user_id, position) \
                    SELECT provider, subject, kind, id, 0 FROM user;
                    ALTER TABLE "user" ADD COLUMN "linked_identities" INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE "user" ADD COLUMN "session_uid" INTEGER;
                    """
            )
        }
        migrator.registerMigration("v7-account-tokens") { db in
            // Issue 21, passwords: local accounts can wait for a confirmation (`confirm = "hook"`); every account made
            // before this was confirmed by being made. Confirmation and password-reset tokens: only their SHA-256,
            // single-use (deleted when used), one per account and purpose (a new one replaces the old), gone with
            // their account.
            try db.execute(
                sql: """
                    ALTER TABLE "local_account" ADD COLUMN "confirmed" BOOLEAN NOT NULL DEFAULT 1;
                    CREATE TABLE "local_account_token" ("token_hash" BLOB PRIMARY KEY NOT NULL, \
                    "account_id" TEXT NOT NULL REFERENCES "local_account"("id") ON DELETE CASCADE, \
                    "purpose" TEXT NOT NULL, "expires_at" INTEGER NOT NULL, UNIQUE ("account_id", "purpose"));
                    """
            )
        }
        migrator.registerMigration("v8-profiles") { db in
            // Issue 21, part 4: each user's profile and custom data (canonical JSON objects, `UserClaims`), and the
            // profile a local account's owner edits (`update_profile`). Depends on no other migration of the issue.
            try db.execute(
                sql: """
                    ALTER TABLE "user" ADD COLUMN "profile" TEXT NOT NULL DEFAULT '{}';
                    ALTER TABLE "user" ADD COLUMN "custom_data" TEXT NOT NULL DEFAULT '{}';
                    ALTER TABLE "local_account" ADD COLUMN "profile" TEXT NOT NULL DEFAULT '{}';
                    """
            )
            // Existing users get the profile they had: their email and name.
            try Self.seedProfiles(db)
        }
        migrator.registerMigration("v9-dpop-keys") { db in
            // Issue 24, part 3: the private key a session's tokens are bound to (DPoP), sealed like the tokens. It is a
            // column of the user's row, so it is written in the same transaction as the tokens it binds.
            try db.execute(sql: #"ALTER TABLE "user" ADD COLUMN "dpop_key" TEXT"#)
        }
        migrator.registerMigration("v11-session-bindings") { db in
            // Issue 37, part 1 (pam_usher): login sessions bound to users, and why each user's last session ended.
            try Self.createSessionBindings(db)
        }
        migrator.registerMigration("v12-unix-users") { db in
            // Issue 37, section 2: each user's Unix account (`[unix_users]`). A row is never deleted: a removed user's
            // uid and name stay reserved for it (and are its again if it comes back), so no uid is ever another
            // user's. Independent of the issue's other migrations.
            try db.execute(
                sql: """
                    CREATE TABLE "unix_user" ("user_id" TEXT PRIMARY KEY NOT NULL, \
                    "uid" INTEGER NOT NULL UNIQUE CHECK ("uid" BETWEEN 0 AND 4294967294), \
                    "name" TEXT NOT NULL UNIQUE, "created_at" INTEGER NOT NULL);
                    """
            )
        }
        migrator.registerMigration("v10-seat-pins") { db in
            // Issue 37, part 3 (the seat's lock): the locked seats, and each user's PIN for `unlock`.
            try Self.createSeatPins(db)
        }
        return migrator
    }
}
