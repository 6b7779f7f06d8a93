/// `access_token`: a currently valid access token for a user, refreshed first when needed.
public struct AccessTokenRequest: UsherRequest {
    public static let method = Method.accessToken
    /// The default for `min_valid`, in seconds.
    public static let defaultMinimumValidity: Int64 = 60

    /// Default: the active user.
    public var userID: String?
    /// How many seconds the returned token must stay valid at least (capped at what a fresh token can give).
    public var minValid: Int64?
    /// The seat whose active user is meant when `user_id` is absent. Default: the caller's seat, else the default.
    public var seat: String?
    /// A token for this audience and no more than these scopes, instead of the session's own (docs/least-privilege.md).
    public var narrowing: TokenAudience

    public init(
        userID: String? = nil,
        minValid: Int64? = nil,
        seat: String? = nil,
        narrowing: TokenAudience = TokenAudience()
    ) {
        self.userID = userID
        self.minValid = minValid
        self.seat = seat
        self.narrowing = narrowing
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.optionalString("user_id")
        self.minValid = try params.optionalInt("min_valid", in: 0...(366 * 86_400))
        self.seat = try params.optionalString("seat")
        self.narrowing = try TokenAudience(params: params)
    }

    public var params: Params {
        var params = Params()
        params.set("user_id", self.userID)
        params.set("min_valid", self.minValid)
        params.set("seat", self.seat)
        self.narrowing.set(in: &params)
        return params
    }

    public struct Result: Sendable, Hashable, Codable, CustomStringConvertible {
        public var userID: String
        public var accessToken: String
        public var tokenType: String
        public var expiresAt: Timestamp
        public var expiresIn: Int64
        /// A narrowed token's audience and scopes (absent from the session's own token).
        public var audience: String?
        public var scopes: [String]?

        public init(
            userID: String,
            accessToken: String,
            tokenType: String,
            expiresAt: Timestamp,
            expiresIn: Int64,
            audience: String? = nil,
            scopes: [String]? = nil
        ) {
            self.userID = userID
            self.accessToken = accessToken
            self.tokenType = tokenType
            self.expiresAt = expiresAt
            self.expiresIn = expiresIn
            self.audience = audience
            self.scopes = scopes
        }

        private enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case accessToken = "access_token"
            case tokenType = "token_type"
            case expiresAt = "expires_at"
            case expiresIn = "expires_in"
            case audience
            case scopes
        }

        /// Never shows the token.
        public var description: String { "access token for \(self.userID), expires \(self.expiresAt)" }
    }
}
