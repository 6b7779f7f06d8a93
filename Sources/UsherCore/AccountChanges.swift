// What the registry answers about accounts at providers that keep them (email/password): registration, a password
// changed, an account confirmed, a reset that ended sessions. The answers that must not tell whether an email has an
// account (`request_password_reset`, `resend_confirmation`) are the provider's name alone.

/// An email/password account at a provider (registered, confirmed, or whose password changed).
package struct Account: Sendable, Hashable {
    package var provider: String
    /// As the provider normalised it.
    package var email: String

    package init(provider: String, email: String) {
        self.provider = provider
        self.email = email
    }
}

/// A registration: the account, and whether it waits for its confirmation (the provider's hook has the token).
package struct Registration: Sendable, Hashable {
    package var account: Account
    package var awaitsConfirmation: Bool

    package init(account: Account, awaitsConfirmation: Bool) {
        self.account = account
        self.awaitsConfirmation = awaitsConfirmation
    }
}

/// A password reset as committed: the account, and the users whose sessions it ended (by id, sorted).
package struct PasswordResetChange: Sendable, Hashable {
    package var account: Account
    package var loggedOut: [String]
    package var generation: Int64

    package init(account: Account, loggedOut: [String], generation: Int64) {
        self.account = account
        self.loggedOut = loggedOut
        self.generation = generation
    }
}
