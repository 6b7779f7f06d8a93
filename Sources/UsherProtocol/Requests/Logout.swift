/// `logout`: discards a user's tokens (revoking them at the provider) and keeps the user, logged out. An anonymous
/// user is removed instead.
public struct LogoutRequest: UsherRequest {
    public static let method = Method.logout
    /// Default: the active user.
    public var userID: String?

    public init(userID: String? = nil) { self.userID = userID }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.optionalString("user_id")
    }

    public var params: Params {
        var params = Params()
        params.set("user_id", self.userID)
        return params
    }

    public struct Result: Sendable, Hashable, Codable {
        public var generation: Int64
        public var user: UserInfo
        /// Whether the provider confirmed the revocation of the session's tokens (false when it was unreachable or
        /// the user was already logged out).
        public var revoked: Bool

        public init(generation: Int64, user: UserInfo, revoked: Bool) {
            self.generation = generation
            self.user = user
            self.revoked = revoked
        }
    }
}
