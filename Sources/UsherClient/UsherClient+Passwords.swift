/// Passwords and confirmation of email/password accounts: the SDK's `confirmUser`, `resendConfirmationEmail`,
/// `sendResetPasswordEmail`, `resetPassword`, and an administrator's reset.
extension UsherClient {
    /// Sets a new password for an email/password account, given its current one. Its sessions stay logged in.
    public func changePassword(
        provider: String? = nil,
        email: String,
        oldPassword: String,
        newPassword: String
    ) async throws -> ChangePasswordRequest.Result {
        try await self.send(
            ChangePasswordRequest(provider: provider, email: email, oldPassword: oldPassword, newPassword: newPassword)
        )
    }

    /// An administrator's reset (permission `manage`): sets a new password without the current one; every session of
    /// the account on the device ends (`user_logged_out` with reason `password_reset`).
    public func resetPassword(
        provider: String? = nil,
        email: String,
        newPassword: String
    ) async throws -> ResetPasswordRequest.Result {
        try await self.send(ResetPasswordRequest(provider: provider, email: email, newPassword: newPassword))
    }

    /// Confirms an account with the token its confirmation hook delivered.
    public func confirmUser(provider: String? = nil, token: String) async throws -> ConfirmUserRequest.Result {
        try await self.send(ConfirmUserRequest(provider: provider, token: token))
    }

    /// Has the confirmation hook deliver a new token (the old one stops working). The same answer whether or not the
    /// email has an unconfirmed account.
    public func resendConfirmation(provider: String? = nil, email: String) async throws -> AccountMessageResult {
        try await self.send(ResendConfirmationRequest(provider: provider, email: email))
    }

    /// Has the reset hook deliver a password-reset token. The same answer whether or not the email has an account.
    public func requestPasswordReset(provider: String? = nil, email: String) async throws -> AccountMessageResult {
        try await self.send(RequestPasswordResetRequest(provider: provider, email: email))
    }

    /// Sets a new password with a reset token; every session of the account on the device ends.
    public func completePasswordReset(
        provider: String? = nil,
        token: String,
        newPassword: String
    ) async throws -> CompletePasswordResetRequest.Result {
        try await self.send(CompletePasswordResetRequest(provider: provider, token: token, newPassword: newPassword))
    }
}
