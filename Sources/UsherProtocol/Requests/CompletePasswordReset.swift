/// `complete_password_reset`: sets a new password with the token the reset hook delivered (`request_password_reset`);
/// every session of the account on the device ends, as with `reset_password`.
public struct CompletePasswordResetRequest: UsherRequest, CustomStringConvertible {
    public static let method = Method.completePasswordReset
    public var provider: String?
    public var token: String
    public var newPassword: String

    public init(provider: String? = nil, token: String, newPassword: String) {
        self.provider = provider
        self.token = token
        self.newPassword = newPassword
    }

    public init(params: Params) throws(ResponseError) {
        self.provider = try params.optionalString("provider")
        self.token = try params.requiredString("token")
        self.newPassword = try params.requiredString("new_password")
    }

    public var params: Params {
        var params = Params(["token": .string(self.token), "new_password": .string(self.newPassword)])
        params.set("provider", self.provider)
        return params
    }

    /// Never shows the token or the password.
    public var description: String { "complete_password_reset(provider: \(self.provider ?? "default"))" }

    /// The same answer as `reset_password`'s.
    public typealias Result = ResetPasswordRequest.Result
}
