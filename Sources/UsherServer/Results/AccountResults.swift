import UsherCore
import UsherProtocol

// The protocol's results for accounts at providers that keep them: one initializer per core value, the only place
// each is mapped.

extension RegisterRequest.Result {
    /// `confirmed` is `false` for an account that waits for its confirmation, and absent otherwise (as it was before
    /// confirmations existed).
    init(_ registration: Registration) {
        self.init(
            provider: registration.account.provider,
            email: registration.account.email,
            confirmed: registration.awaitsConfirmation ? false : nil
        )
    }
}

extension ChangePasswordRequest.Result {
    /// Also `confirm_user`'s result.
    init(_ account: Account) {
        self.init(provider: account.provider, email: account.email)
    }
}

extension ResetPasswordRequest.Result {
    /// Also `complete_password_reset`'s result.
    init(_ reset: PasswordResetChange) {
        self.init(
            provider: reset.account.provider,
            email: reset.account.email,
            loggedOut: reset.loggedOut,
            generation: reset.generation
        )
    }
}
