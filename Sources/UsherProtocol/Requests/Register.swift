/// `register`: creates an email/password account at a provider that supports registration.
public struct RegisterRequest: UsherRequest, CustomStringConvertible {
    public static let method = Method.register
    public var provider: String?
    public var email: String
    public var password: String

    public init(provider: String? = nil, email: String, password: String) {
        self.provider = provider
        self.email = email
        self.password = password
    }

    public init(params: Params) throws(ResponseError) {
        self.provider = try params.optionalString("provider")
        self.email = try params.requiredString("email")
        self.password = try params.requiredString("password")
    }

    public var params: Params {
        var params = Params(["email": .string(self.email), "password": .string(self.password)])
        params.set("provider", self.provider)
        return params
    }

    /// Never shows the password.
    public var description: String { "register(provider: \(self.provider ?? "default"), email: \(self.email))" }

    public struct Result: Sendable, Hashable, Codable {
        public var provider: String
        public var email: String
        /// `false` when the account waits for its confirmation (`confirm = "hook"`: the hook has the token); absent
        /// when the provider confirms accounts itself.
        public var confirmed: Bool?
        public init(provider: String, email: String, confirmed: Bool? = nil) {
            self.provider = provider
            self.email = email
            self.confirmed = confirmed
        }
    }
}
