/// `open_session`: what `pam_usher`'s `open_session` asks. Makes a logged-in user the seat's active user, as
/// `switch_user` does but never breaking a lease (a block lease refuses it with `inhibited`), and records a durable
/// binding of the login session (PAM session, logind session) to that user, which `close_session` ends.
public struct OpenSessionRequest: UsherRequest {
    public static let method = Method.openSession
    /// The user's id, or the email of a logged-in user (the most recently logged-in one when several have it): the
    /// session stage may run in another process than the login, which knows the PAM user's email only.
    public var user: String
    /// The seat. Default: the caller's seat (logind), else the default seat.
    public var seat: String?
    /// logind's id of the login session (`XDG_SESSION_ID`), when there is one: the seat follows it.
    public var logindSession: String?
    /// The PAM service that opened the session (`login`, `gdm-password`, `sshd`), for the record.
    public var service: String?
    /// The Unix uid of the person logging in, who owns the user from now on as if they had logged in themselves
    /// (`set_pin`, `delete_user`: "Whose user"): the PAM module logs in as root on their behalf. Only root and usherd's
    /// uid may name one.
    public var uid: UInt32?

    public init(user: String, seat: String? = nil, logindSession: String? = nil, service: String? = nil) {
        self.user = user
        self.seat = seat
        self.logindSession = logindSession
        self.service = service
    }

    public init(params: Params) throws(ResponseError) {
        self.user = try params.requiredString("user")
        self.seat = try params.optionalString("seat")
        self.logindSession = try params.optionalString("logind_session")
        self.service = try params.optionalString("service")
        self.uid = try params.optionalInt("uid", in: 0...Int64(UInt32.max - 1)).map { UInt32($0) }
        for (key, value) in [("user", self.user), ("logind_session", self.logindSession), ("service", self.service)] {
            guard let value else { continue }
            guard !value.isEmpty, value.utf8.count <= 256,
                !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw ResponseError(.invalidParams, "params.\(key) must be 1 to 256 bytes without control characters")
            }
        }
    }

    public var params: Params {
        var params = Params(["user": .string(self.user)])
        params.set("seat", self.seat)
        params.set("logind_session", self.logindSession)
        params.set("service", self.service)
        params.set("uid", self.uid.map { Int64($0) })
        return params
    }

    /// `{"binding", "generation", "seat", "user"}`.
    public struct Result: Sendable, Hashable, Codable {
        /// The binding's id, which `close_session` takes.
        public var binding: String
        public var generation: Int64
        public var seat: String?
        public var user: UserInfo

        public init(binding: String, generation: Int64, seat: String?, user: UserInfo) {
            self.binding = binding
            self.generation = generation
            self.seat = seat
            self.user = user
        }
    }
}

/// `close_session`: ends a binding `open_session` made, and does `on_close` to its user.
public struct CloseSessionRequest: UsherRequest {
    public static let method = Method.closeSession
    public var binding: String
    public var onClose: OnClose

    /// What happens to the user when its login session closes.
    public enum OnClose: String, Sendable, Hashable, Codable, CaseIterable {
        /// The user stays logged in (its programs keep their tokens until it logs out).
        case keep
        /// The user is logged out (its session revoked at the provider); it stays on the device.
        case logout
        /// The user is removed from the device (as `remove_user`).
        case remove
    }

    public init(binding: String, onClose: OnClose = .keep) {
        self.binding = binding
        self.onClose = onClose
    }

    public init(params: Params) throws(ResponseError) {
        self.binding = try params.requiredString("binding")
        let onClose = try params.optionalString("on_close") ?? OnClose.keep.rawValue
        guard let value = OnClose(rawValue: onClose) else {
            throw ResponseError(.invalidParams, "params.on_close must be keep, logout or remove")
        }
        self.onClose = value
    }

    public var params: Params {
        var params = Params(["binding": .string(self.binding)])
        params.set("on_close", self.onClose.rawValue)
        return params
    }

    /// `{"binding", "user_id", "on_close", "generation"}`.
    public struct Result: Sendable, Hashable, Codable {
        public var binding: String
        public var userID: String
        public var onClose: OnClose
        public var generation: Int64

        public init(binding: String, userID: String, onClose: OnClose, generation: Int64) {
            self.binding = binding
            self.userID = userID
            self.onClose = onClose
            self.generation = generation
        }

        enum CodingKeys: String, CodingKey {
            case binding
            case userID = "user_id"
            case onClose = "on_close"
            case generation
        }
    }
}

/// `user_status`: whether the account with an email (or the user `[unix_users]` serves under a Unix name) is logged
/// in on the device, and if its session ended, why (`pam_usher`'s account stage; with `unix_user`, how it finds the
/// account of a PAM user that is one of usher's Unix users).
public struct UserStatusRequest: UsherRequest {
    public static let method = Method.userStatus
    /// Exactly one of `email` and `unixUser`.
    public var email: String?
    public var unixUser: String?

    public init(email: String) {
        self.email = email
    }

    public init(unixUser: String) {
        self.unixUser = unixUser
    }

    public init(params: Params) throws(ResponseError) {
        self.email = try params.optionalString("email")
        self.unixUser = try params.optionalString("unix_user")
        guard (self.email == nil) != (self.unixUser == nil) else {
            throw ResponseError(.invalidParams, "params.email or params.unix_user is required (one of them)")
        }
    }

    public var params: Params {
        var params = Params()
        params.set("email", self.email)
        params.set("unix_user", self.unixUser)
        return params
    }

    /// `{"status", "user_id", "email", "ended"}`.
    public struct Result: Sendable, Hashable, Codable {
        /// `logged_in`, `logged_out`, or `unknown` (no user on the device has this email or Unix name).
        public var status: String
        /// The user's id (absent when unknown).
        public var userID: String?
        /// The account's email (absent when unknown).
        public var email: String?
        /// Why its last session ended (a `user_logged_out` reason: `requested`, `session_revoked`,
        /// `refresh_token_expired`, ...); absent when logged in, unknown, or ended before usher recorded it.
        public var ended: String?

        public init(status: String, userID: String? = nil, email: String? = nil, ended: String? = nil) {
            self.status = status
            self.userID = userID
            self.email = email
            self.ended = ended
        }

        enum CodingKeys: String, CodingKey {
            case status
            case userID = "user_id"
            case email
            case ended
        }
    }
}
