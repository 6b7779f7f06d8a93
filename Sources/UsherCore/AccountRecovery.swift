/// A password that a provider is about to set without the current one (an administrator's reset, or a reset token):
/// the account it belongs to, and the write that sets it.
///
/// The write is not made by the provider: the registry commits it (`Draft.pendingWrites`) in the same transaction
/// that logs out every session of the account on the device, so that a crash leaves either the old password with
/// the sessions or the new password without them. It also deletes the account's refresh grants and, for a reset by
/// token, consumes the token; when it cannot (the account or the token went meanwhile), it throws and nothing of
/// the change is written.
package struct PasswordReset: Sendable {
    /// The account's subject: the users whose session is this account have it (with the provider's name).
    package var subject: String
    package var email: String
    package var write: any PendingWrite

    package init(subject: String, email: String, write: any PendingWrite) {
        self.subject = subject
        self.email = email
        self.write = write
    }
}

/// Providers whose accounts can be reset and confirmed without their password (the local provider): the SDK's
/// `confirmUser`, `resendConfirmationEmail`, `sendResetPasswordEmail`, `resetPassword`, and an administrator's reset.
///
/// A device has no mail server: tokens are delivered by hooks the provider's configuration names. Tokens are random,
/// single-use, expire, and are stored only as hashes.
package protocol AccountRecovering: AccountRegistering {
    /// Whether `register` creates accounts that wait for `confirm` (`confirm = "hook"`).
    var confirmsAccounts: Bool { get }

    /// The write that sets `newPassword` for the account with this email, without the current password.
    ///
    /// - Throws: `ProviderError.invalidParams` for a password out of bounds, `.invalidCredentials` when no account
    ///   has this email.
    func resetPassword(email: String, newPassword: String) async throws -> PasswordReset

    /// The write that sets `newPassword` for the account a reset token was issued for, consuming the token.
    ///
    /// - Throws: `ProviderError.invalidToken` for a token that is unknown, used, replaced or expired.
    func completePasswordReset(token: String, newPassword: String) async throws -> PasswordReset

    /// Runs the reset hook with a new token for the account with this email; does nothing (and says nothing
    /// different) when there is none.
    ///
    /// - Throws: `ProviderError.unsupportedCredentials` when no reset hook is configured.
    func requestPasswordReset(email: String) async throws

    /// Confirms the account a confirmation token was issued for, consuming the token. Returns its email.
    ///
    /// - Throws: `ProviderError.invalidToken`.
    func confirm(token: String) async throws -> String

    /// Runs the confirmation hook again with a new token (the old one stops working) for the unconfirmed account
    /// with this email; does nothing (and says nothing different) for any other email.
    ///
    /// - Throws: `ProviderError.unsupportedCredentials` when accounts are confirmed without a hook.
    func resendConfirmation(email: String) async throws
}
