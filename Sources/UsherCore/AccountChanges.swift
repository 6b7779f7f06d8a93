import UsherProtocol

// What the registry answers about accounts at providers that keep them (email/password): registration, a password
// changed, an account confirmed, a reset that ended sessions. The answers that must not tell whether an email has an
// account (`request_password_reset`, `resend_confirmation`) are the provider's name alone.

/// An email/password account at a provider (registered, confirmed, or whose password changed), the email as the
/// provider normalised it: `change_password`'s and `confirm_user`'s result.
package typealias Account = ChangePasswordRequest.Result

/// A registration: the account, and whether it waits for its confirmation (the provider's hook has the token). Not
/// `register`'s result: that one says `"confirmed": false` for an account that waits, and nothing otherwise (as before
/// confirmations existed), which the server writes from this.
package struct Registration: Sendable, Hashable {
    package var account: Account
    package var awaitsConfirmation: Bool

    package init(account: Account, awaitsConfirmation: Bool) {
        self.account = account
        self.awaitsConfirmation = awaitsConfirmation
    }
}

/// A password reset as committed: the account, and the users whose sessions it ended (by id, sorted).
package typealias PasswordResetChange = ResetPasswordRequest.Result
