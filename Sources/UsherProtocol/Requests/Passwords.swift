// The account methods that carry a password or a token: their descriptions (for logs and test failures) never show
// it. Their types are generated from varlink/io.usher.Session.varlink.

extension RegisterRequest: CustomStringConvertible {
    /// Never shows the password.
    public var description: String { "register(provider: \(self.provider ?? "default"), email: \(self.email))" }
}

extension ChangePasswordRequest: CustomStringConvertible {
    /// Never shows a password.
    public var description: String {
        "change_password(provider: \(self.provider ?? "default"), email: \(self.email))"
    }
}

extension ResetPasswordRequest: CustomStringConvertible {
    /// Never shows the password.
    public var description: String { "reset_password(provider: \(self.provider ?? "default"), email: \(self.email))" }
}

extension CompletePasswordResetRequest: CustomStringConvertible {
    /// Never shows the token or the password.
    public var description: String { "complete_password_reset(provider: \(self.provider ?? "default"))" }
}

extension ConfirmUserRequest: CustomStringConvertible {
    /// Never shows the token.
    public var description: String { "confirm_user(provider: \(self.provider ?? "default"))" }
}

extension ResendConfirmationRequest: CustomStringConvertible {
    public var description: String {
        "resend_confirmation(provider: \(self.provider ?? "default"), email: \(self.email))"
    }
}

extension RequestPasswordResetRequest: CustomStringConvertible {
    public var description: String {
        "request_password_reset(provider: \(self.provider ?? "default"), email: \(self.email))"
    }
}

/// The answer of `resend_confirmation` and `request_password_reset`: the provider, and nothing that would tell
/// whether the email has an account (the hook runs only when it has one).
public typealias AccountMessageResult = ResendConfirmationRequest.Result
