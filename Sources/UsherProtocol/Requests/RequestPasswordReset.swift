/// `request_password_reset`: runs the reset hook with a new token for the account with this email, if there is one.
/// The answer is the same whether or not the email has an account.
public struct RequestPasswordResetRequest: UsherRequest, CustomStringConvertible {
    public static let method = Method.requestPasswordReset
    public var provider: String?
    public var email: String

    public init(provider: String? = nil, email: String) {
        self.provider = provider
        self.email = email
    }

    public init(params: Params) throws(ResponseError) {
        self.provider = try params.optionalString("provider")
        self.email = try params.requiredString("email")
    }

    public var params: Params {
        var params = Params(["email": .string(self.email)])
        params.set("provider", self.provider)
        return params
    }

    public var description: String {
        "request_password_reset(provider: \(self.provider ?? "default"), email: \(self.email))"
    }

    public typealias Result = AccountMessageResult
}
