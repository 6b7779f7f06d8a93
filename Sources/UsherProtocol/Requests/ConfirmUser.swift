/// `confirm_user`: confirms an email/password account with the token the confirmation hook delivered.
public struct ConfirmUserRequest: UsherRequest, CustomStringConvertible {
    public static let method = Method.confirmUser
    public var provider: String?
    public var token: String

    public init(provider: String? = nil, token: String) {
        self.provider = provider
        self.token = token
    }

    public init(params: Params) throws(ResponseError) {
        self.provider = try params.optionalString("provider")
        self.token = try params.requiredString("token")
    }

    public var params: Params {
        var params = Params(["token": .string(self.token)])
        params.set("provider", self.provider)
        return params
    }

    /// Never shows the token.
    public var description: String { "confirm_user(provider: \(self.provider ?? "default"))" }

    public struct Result: Sendable, Hashable, Codable {
        public var provider: String
        public var email: String

        public init(provider: String, email: String) {
            self.provider = provider
            self.email = email
        }
    }
}
