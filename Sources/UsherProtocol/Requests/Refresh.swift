/// `refresh`: refreshes a user's access token now.
public struct RefreshRequest: UsherRequest {
    public static let method = Method.refresh
    /// Default: the active user.
    public var userID: String?
    /// The seat whose active user is meant when `user_id` is absent. Default: the caller's seat, else the default.
    public var seat: String?

    public init(userID: String? = nil, seat: String? = nil) {
        self.userID = userID
        self.seat = seat
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.optionalString("user_id")
        self.seat = try params.optionalString("seat")
    }

    public var params: Params {
        var params = Params()
        params.set("user_id", self.userID)
        params.set("seat", self.seat)
        return params
    }

    public struct Result: Sendable, Hashable, Codable {
        public var userID: String
        public var accessTokenExpiresAt: Timestamp

        public init(userID: String, accessTokenExpiresAt: Timestamp) {
            self.userID = userID
            self.accessTokenExpiresAt = accessTokenExpiresAt
        }

        private enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case accessTokenExpiresAt = "access_token_expires_at"
        }
    }
}
