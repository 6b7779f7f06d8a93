/// `change_password`: sets a new password for an email/password account, given its current one.
public struct ChangePasswordRequest: UsherRequest, CustomStringConvertible {
    public static let method = Method.changePassword
    public var provider: String?
    public var email: String
    public var oldPassword: String
    public var newPassword: String

    public init(provider: String? = nil, email: String, oldPassword: String, newPassword: String) {
        self.provider = provider
        self.email = email
        self.oldPassword = oldPassword
        self.newPassword = newPassword
    }

    public init(params: Params) throws(ResponseError) {
        self.provider = try params.optionalString("provider")
        self.email = try params.requiredString("email")
        self.oldPassword = try params.requiredString("old_password")
        self.newPassword = try params.requiredString("new_password")
    }

    public var params: Params {
        var params = Params([
            "email": .string(self.email), "old_password": .string(self.oldPassword),
            "new_password": .string(self.newPassword),
        ])
        params.set("provider", self.provider)
        return params
    }

    /// Never shows a password.
    public var description: String {
        "change_password(provider: \(self.provider ?? "default"), email: \(self.email))"
    }

    public struct Result: Sendable, Hashable, Codable {
        public var provider: String
        public var email: String

        public init(provider: String, email: String) {
            self.provider = provider
            self.email = email
        }
    }
}
