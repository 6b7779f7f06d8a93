import UsherCore
import UsherProtocol

// `register`'s result, from the core's registration (AccountChanges.swift says why the two differ). The other
// account methods answer with the core's values as they are.

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
