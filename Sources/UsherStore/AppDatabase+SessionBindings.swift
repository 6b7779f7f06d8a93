import UsherCore
import UsherProtocol

/// Session bindings (`open_session`) and the last end of each user's session (`user_status`): migration
/// `v11-session-bindings`.
extension AppDatabase: SessionBindingStore {
    package func loadSessionBindings() async throws -> [SessionBinding] {
        try await self.writer.read { db in
            try db.fetchAll(
                sql: """
                    SELECT id, user_id, seat, logind_session, service, peer_uid, created_at FROM session_binding \
                    ORDER BY created_at
                    """
            ) { row in
                SessionBinding(
                    id: try row[0] as String,
                    userID: try row[1] as String,
                    seat: try row[2] as String,
                    logindSession: try row[3] as String?,
                    service: try row[4] as String?,
                    peerUID: (try row[5] as Int64?).flatMap { UInt32(exactly: $0) },
                    createdAt: Timestamp(millisecondsSinceEpoch: try row[6] as Int64)
                )
            }
        }
    }

    /// One indexed read: SQLite's `NOCASE` finds the candidates (ASCII case), `EmailAddress.key` decides (canonical
    /// equivalence, and the case of every letter). Emails are stored composed (NFC), so the composed form is asked for
    /// too.
    package func users(withEmail email: String) async throws -> [EmailUser] {
        let composed = EmailAddress.composed(email)
        let key = EmailAddress.key(email)
        let rows = try await self.writer.read { db in
            try db.fetchAll(
                sql: """
                    SELECT u.id, u.email, u.state, u.last_login_at, e.reason FROM "user" u \
                    LEFT JOIN session_ending e ON e.user_id = u.id \
                    WHERE u.email = ? COLLATE NOCASE OR u.email = ? COLLATE NOCASE
                    """,
                arguments: [email, composed]
            ) { row in
                EmailUser(
                    userID: try row[0] as String,
                    email: try row[1] as String,
                    isLoggedIn: (try row[2] as String) == User.State.loggedIn.rawValue,
                    lastLoginAt: (try row[3] as Int64?).map(Timestamp.init(millisecondsSinceEpoch:)),
                    ended: try row[4] as String?
                )
            }
        }
        return rows.filter { EmailAddress.key($0.email) == key }
    }

    /// The database alone serves no Unix users (`UnixUserAllocatingStore` does).
    package func email(ofUnixUser name: String) -> String? { nil }

    /// Migration `v11-session-bindings` (issue 37): the bindings `open_session` records, the last end of each user's
    /// session, and an index that finds users by email. Depends on no other migration of the issue.
    static func createSessionBindings(_ db: Connection) throws {
        try db.execute(
            sql: """
                CREATE TABLE "session_binding" ("id" TEXT PRIMARY KEY NOT NULL, "user_id" TEXT NOT NULL, \
                "seat" TEXT NOT NULL, "logind_session" TEXT, "service" TEXT, "peer_uid" INTEGER, \
                "created_at" INTEGER NOT NULL);
                CREATE INDEX "session_binding_logind" ON "session_binding"("logind_session");
                CREATE TABLE "session_ending" ("user_id" TEXT PRIMARY KEY NOT NULL, "reason" TEXT NOT NULL, \
                "ended_at" INTEGER NOT NULL);
                CREATE INDEX "user_email_nocase" ON "user"("email" COLLATE NOCASE);
                """
        )
    }
}

extension SessionBindingWrite: DatabaseWrite {
    func perform(in db: Connection) throws {
        switch self {
        case .open(let binding):
            try db.execute(
                sql: """
                    INSERT INTO session_binding (id, user_id, seat, logind_session, service, peer_uid, created_at) \
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    binding.id, binding.userID, binding.seat, binding.logindSession, binding.service,
                    binding.peerUID.map(Int64.init), binding.createdAt.millisecondsSinceEpoch,
                ]
            )
        case .close(let id):
            try db.execute(sql: "DELETE FROM session_binding WHERE id = ?", arguments: [id])
        case .ending(let userID, let reason, let at):
            try db.execute(
                sql: """
                    INSERT INTO session_ending (user_id, reason, ended_at) VALUES (?, ?, ?) \
                    ON CONFLICT (user_id) DO UPDATE SET reason = excluded.reason, ended_at = excluded.ended_at
                    """,
                arguments: [userID, reason, at.millisecondsSinceEpoch]
            )
        }
    }
}

/// With `[unix_users]`, the store the registry holds is this wrapper: the bindings are the database's, and a Unix
/// user name is one of the directory's.
extension UnixUserAllocatingStore: SessionBindingStore {
    package func loadSessionBindings() async throws -> [SessionBinding] {
        try await self.database.loadSessionBindings()
    }

    package func users(withEmail email: String) async throws -> [EmailUser] {
        try await self.database.users(withEmail: email)
    }

    package func email(ofUnixUser name: String) -> String? {
        self.directory.user(named: name)?.email
    }
}
