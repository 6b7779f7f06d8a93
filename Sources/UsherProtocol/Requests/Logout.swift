/// `logout`: discards a user's tokens (revoking them at the provider) and keeps the user, logged out. An anonymous
/// user is removed instead.
public struct LogoutRequest: UsherRequest {
    public static let method = Method.logout
    /// Default: the active user.
    public var userID: String?
    /// The seat whose active user is meant when `user_id` is absent. Default: the caller's seat, else the default.
    public var seat: String?
    /// Whether a block lease on the user's seat is broken (needs `manage`; audited as forced).
    public var force = false

    public init(userID: String? = nil, seat: String? = nil, force: Bool = false) {
        self.userID = userID
        self.seat = seat
        self.force = force
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.optionalString("user_id")
        self.seat = try params.optionalString("seat")
        self.force = try params.optionalBool("force") ?? false
    }

    public var params: Params {
        var params = Params()
        params.set("user_id", self.userID)
        params.set("seat", self.seat)
        params.set("force", flag: self.force)
        return params
    }

    public struct Result: Sendable, Hashable, Codable {
        public var generation: Int64
        public var user: UserInfo
        /// Whether the provider confirmed the revocation of the session's tokens (false when it was unreachable or
        /// the user was already logged out).
        public var revoked: Bool
        /// The seat the user was active on until this logout (absent when none, and on devices that do not name
        /// seats).
        public var seat: String?

        public init(generation: Int64, user: UserInfo, revoked: Bool, seat: String? = nil) {
            self.generation = generation
            self.user = user
            self.revoked = revoked
            self.seat = seat
        }
    }
}
