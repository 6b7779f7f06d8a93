/// `reset_password`: an administrator sets a new password for an email/password account; every session of that
/// account on the device ends (`user_logged_out` with reason `password_reset`).
public struct ResetPasswordRequest: UsherRequest, CustomStringConvertible {
    public static let method = Method.resetPassword
    public var provider: String?
    public var email: String
    public var newPassword: String

    public init(provider: String? = nil, email: String, newPassword: String) {
        self.provider = provider
        self.email = email
        self.newPassword = newPassword
    }

    public init(params: Params) throws(ResponseError) {
        self.provider = try params.optionalString("provider")
        self.email = try params.requiredString("email")
        self.newPassword = try params.requiredString("new_password")
    }

    public var params: Params {
        var params = Params(["email": .string(self.email), "new_password": .string(self.newPassword)])
        params.set("provider", self.provider)
        return params
    }

    /// Never shows the password.
    public var description: String {
        "reset_password(provider: \(self.provider ?? "default"), email: \(self.email))"
    }

    /// The account, and the users on the device whose sessions of it ended.
    public struct Result: Sendable, Hashable, Codable {
        public var provider: String
        public var email: String
        /// The users logged out by the reset (`user_logged_out` with reason `password_reset`).
        public var loggedOut: [String]
        public var generation: Int64

        public init(provider: String, email: String, loggedOut: [String], generation: Int64) {
            self.provider = provider
            self.email = email
            self.loggedOut = loggedOut
            self.generation = generation
        }

        enum CodingKeys: String, CodingKey {
            case provider, email, generation
            case loggedOut = "logged_out"
        }
    }
}
