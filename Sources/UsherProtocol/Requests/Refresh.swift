/// `refresh`: refreshes a user's access token now.
public struct RefreshRequest: UsherRequest {
    public static let method = Method.refresh
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
