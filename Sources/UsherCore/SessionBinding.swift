import UsherProtocol

/// A login session bound to an usher user by `open_session` (`pam_usher`'s session stage): the PAM session, and
/// logind's session when there is one. `close_session` ends it; the seat follows the logind session's bound user.
package struct SessionBinding: Sendable, Hashable {
    /// `b_` and 16 hex digits: what `close_session` takes.
    package var id: String
    package var userID: String
    package var seat: String
    /// logind's session id (`XDG_SESSION_ID`); nil when the session has none (an sshd without systemd's PAM module).
    package var logindSession: String?
    /// The PAM service that opened it (`login`, `gdm-password`, `sshd`).
    package var service: String?
    /// The uid of the peer that opened it: it, root and usherd's uid may close it.
    package var peerUID: UInt32?
    package var createdAt: Timestamp

    package init(
        id: String,
        userID: String,
        seat: String,
        logindSession: String?,
        service: String?,
        peerUID: UInt32?,
        createdAt: Timestamp
    ) {
        self.id = id
        self.userID = userID
        self.seat = seat
        self.logindSession = logindSession
        self.service = service
        self.peerUID = peerUID
        self.createdAt = createdAt
    }

    /// A new, unguessable binding id.
    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return "b_" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// The bindings open now, by id and by logind session (the newest binding of a logind session wins).
struct SessionBindingTable: Sendable {
    private(set) var byID: [String: SessionBinding] = [:]
    private var byLogindSession: [String: String] = [:]

    init(_ bindings: [SessionBinding] = []) {
        for binding in bindings.sorted(by: { $0.createdAt < $1.createdAt }) { self.insert(binding) }
    }

    subscript(id: String) -> SessionBinding? { self.byID[id] }

    mutating func insert(_ binding: SessionBinding) {
        self.byID[binding.id] = binding
        if let session = binding.logindSession { self.byLogindSession[session] = binding.id }
    }

    mutating func remove(_ id: String) {
        guard let binding = self.byID.removeValue(forKey: id) else { return }
        if let session = binding.logindSession, self.byLogindSession[session] == id {
            // An older binding of the same logind session (a re-opened PAM session) takes over, if any.
            self.byLogindSession[session] =
                self.byID.values.filter { $0.logindSession == session }.max { $0.createdAt < $1.createdAt }?.id
        }
    }

    func binding(logindSession: String) -> SessionBinding? {
        self.byLogindSession[logindSession].flatMap { self.byID[$0] }
    }
}

/// A user found by email for `user_status` and `open_session`: its id, state, and why its last session ended.
package struct EmailUser: Sendable, Hashable {
    package var userID: String
    package var email: String
    package var isLoggedIn: Bool
    package var lastLoginAt: Timestamp?
    /// A `LogoutReason` raw value; nil when the user never logged out since usher recorded endings.
    package var ended: String?

    package init(userID: String, email: String, isLoggedIn: Bool, lastLoginAt: Timestamp?, ended: String?) {
        self.userID = userID
        self.email = email
        self.isLoggedIn = isLoggedIn
        self.lastLoginAt = lastLoginAt
        self.ended = ended
    }
}

/// The store's side of session bindings and session endings (`AppDatabase` is one). Writes go through the
/// registry's change as `SessionBindingWrite`s, in the change's own transaction.
package protocol SessionBindingStore: Sendable {
    func loadSessionBindings() async throws -> [SessionBinding]
    /// The users on the device whose email is `email` (case and canonical equivalence ignored), as committed.
    func users(withEmail email: String) async throws -> [EmailUser]
    /// The email of the user that `[unix_users]` serves as the Unix user `name`; nil when none (or no email).
    func email(ofUnixUser name: String) -> String?
}

/// A write of the binding tables that belongs to a registry change: performed in its transaction.
package enum SessionBindingWrite: PendingWrite, Hashable {
    case open(SessionBinding)
    case close(id: String)
    /// The last end of a user's session, and why (what `user_status` answers as `ended`).
    case ending(userID: String, reason: String, at: Timestamp)
}
