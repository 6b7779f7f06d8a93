import UsherCore

extension AppDatabase: SessionStore {
    /// Every user, in the order they were added, with their secrets opened.
    ///
    /// On the daemon's start-up path, so it is made cheap for 100,000 users: one cursor over the rows (never all rows
    /// and all users in memory at once), each row read by column index (`UserRecord.init(row:)`), into an array sized
    /// in advance, and the cipher's key made once for the whole load.
    ///
    /// With a cipher, secrets stored in plaintext (from before encryption was turned on) are sealed before this
    /// returns: a commit writes only the columns that change, so an unchanged secret would otherwise stay readable
    /// until its next refresh.
    package func loadSessions() async throws -> PersistedSessions {
        let (sessions, unsealed) = try await self.writer.read { db in
            let generation = try db.fetchOne(Int64.self, sql: "SELECT value FROM meta WHERE key = 'generation'") ?? 0
            var users: [User] = []
            var unsealed: [Int] = []
            users.reserveCapacity(try db.fetchOne(Int.self, sql: #"SELECT COUNT(*) FROM "user""#) ?? 0)
            let opener = TokenCipher.Opener(self.cipher)
            var linked: [Int] = []
            try db.forEach(sql: #"SELECT \#(UserRecord.selection) FROM "user" ORDER BY "added_generation""#) { row in
                let record = try UserRecord(row: row)
                if self.cipher != nil && record.holdsPlaintextSecrets { unsealed.append(users.count) }
                if record.linkedIdentities > 0 { linked.append(users.count) }
                users.append(try record.user(opening: opener))
            }
            // Only users with a second identity have rows to read: for everyone else the session's is the only one.
            for index in linked {
                let session = users[index].sessionIdentity
                users[index].otherIdentities = try Self.identities(of: users[index].id, in: db).filter {
                    !$0.isSameAccount(as: session)
                }
            }
            var seats: [String: String?] = [:]
            try db.forEach(sql: "SELECT name, user_id FROM seat") { row in
                seats[try row[0] as String] = .some(try row[1] as String?)
            }
            let sessions = PersistedSessions(generation: generation, users: users, seats: seats.isEmpty ? nil : seats)
            return (sessions, unsealed)
        }
        if !unsealed.isEmpty { try await self.seal(unsealed.map { sessions.users[$0] }) }
        return sessions
    }

    /// Rewrites the secrets of `users` sealed, in one transaction.
    private func seal(_ users: [User]) async throws {
        let cipher = self.cipher
        let secrets = UserRecord.Columns.secrets
        try await self.writer.write { db in
            for user in users {
                try UserRecord(user, sealing: secrets, cipher: cipher).update(in: db, columns: secrets)
            }
        }
    }

    /// Writes one change in one transaction: its pending writes first, then the generation, the deleted users, and
    /// the saved users.
    ///
    /// A saved user with a previous version (`SessionChange.previous`) is updated in only the columns that changed, so
    /// that a change of `last_active_at` writes one column and leaves the sealed tokens as they are (resealing them
    /// would write new ciphertext for an unchanged secret, and cost a seal per token). A saved user without one is
    /// new and is inserted whole; as an upsert, so that a caller that does not know the previous version (a test
    /// seeding the database, or a registry that does not track it) still gets a correct row.
    ///
    /// A change that deletes a secret (a user removed, a session's tokens or DPoP key gone or replaced by another key)
    /// is followed by a checkpoint (`DatabaseWriter.checkpoint`), so that the secret does not stay in the `-wal` file.
    package func commit(_ change: SessionChange) async throws {
        let cipher = self.cipher
        try await self.writer.write { db in
            // First, so that a pending write that cannot be done (its grant is gone) fails the change before anything
            // else is written; any error rolls the whole transaction back.
            for write in change.pendingWrites {
                guard let write = write as? any DatabaseWrite else {
                    throw StoreError.unsupportedWrite(String(describing: type(of: write)))
                }
                try write.perform(in: db)
            }
            if let generation = change.generation {
                try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'generation'", arguments: [generation])
            }
            if !change.deleted.isEmpty {
                try UserRecord.delete(in: db, ids: change.deleted)
            }
            for userID in change.forgottenIdentities {
                try Self.forgetIdentities(of: userID, in: db)
            }
            for (seat, userID) in change.seats {
                try db.execute(
                    sql:
                        "INSERT INTO seat (name, user_id) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET user_id = excluded.user_id",
                    arguments: [seat, userID]
                )
            }
            for user in change.saved {
                if change.previous[user.id].map({ !$0.hasSameIdentities(as: user) }) ?? true {
                    try Self.record(identitiesOf: user, in: db)
                }
                guard let previous = change.previous[user.id] else {
                    try UserRecord(user, cipher: cipher).upsert(in: db)
                    continue
                }
                let columns = UserRecord.Columns.changed(from: previous, to: user)
                guard !columns.isEmpty else { continue }
                let record = try UserRecord(
                    user,
                    sealing: columns.intersection(UserRecord.Columns.secrets),
                    cipher: cipher
                )
                try record.update(in: db, columns: columns)
            }
        }
        if Self.deletesSecrets(change) { try await self.writer.checkpoint() }
    }

    /// Whether `change` deletes a secret of the user table: a user removed, a session's tokens gone (a logout), its
    /// DPoP key gone or replaced. A refresh, which replaces tokens with new ones, does not count: it would checkpoint
    /// at every refresh, and SQLite's own checkpoints overwrite those frames soon enough.
    static func deletesSecrets(_ change: SessionChange) -> Bool {
        if !change.deleted.isEmpty { return true }
        return change.saved.contains { user in
            guard let old = change.previous[user.id]?.tokens else { return false }
            guard let new = user.tokens else { return true }
            return old.dpopKey != nil && old.dpopKey != new.dpopKey
        }
    }
}
