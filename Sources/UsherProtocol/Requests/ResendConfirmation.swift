/// `resend_confirmation`: runs the confirmation hook again for an unconfirmed account, with a new token (the old one
/// stops working). The answer is the same whether or not the email has an account.
public struct ResendConfirmationRequest: UsherRequest, CustomStringConvertible {
    public static let method = Method.resendConfirmation
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
        "resend_confirmation(provider: \(self.provider ?? "default"), email: \(self.email))"
    }

    /// The same answer whatever the email: it never says whether the email has an account.
    public typealias Result = AccountMessageResult
}

/// The answer of `resend_confirmation` and `request_password_reset`: the provider, and nothing that would tell
/// whether the email has an account (the hook runs only when it has one).
public struct AccountMessageResult: Sendable, Hashable, Codable {
    public var provider: String

    public init(provider: String) {
        self.provider = provider
    }
}
