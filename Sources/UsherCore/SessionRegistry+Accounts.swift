/// Accounts at providers that keep them: registration and a password change (the resets are in
/// `SessionRegistry+Passwords.swift`).
extension SessionRegistry {
    /// Registers an email/password account at the provider (the default one when nil).
    package func register(
        provider name: String?,
        email: String,
        password: String
    ) async throws -> Registration {
        try self.requireRunning()
        let provider = try self.provider(named: name)
        guard let registering = provider as? any AccountRegistering else {
            throw ProviderError.unsupportedCredentials("provider \(provider.name) does not support registration")
        }
        let normalizedEmail = try await registering.register(email: email, password: password)
        // Whether the account waits for its confirmation (the provider's hook has the token).
        let waits = (registering as? any AccountRecovering)?.confirmsAccounts == true
        return Registration(
            account: Account(provider: provider.name, email: normalizedEmail),
            awaitsConfirmation: waits
        )
    }

    /// Sets a new password for an email/password account, given its current one. The account's sessions on the device
    /// stay logged in: the caller proved it knows the password (an administrative reset is what ends them).
    package func changePassword(
        provider name: String?,
        email: String,
        oldPassword: String,
        newPassword: String
    ) async throws -> Account {
        try self.requireRunning()
        let provider = try self.provider(named: name)
        guard let accounts = provider as? any AccountRegistering else {
            throw ProviderError.unsupportedCredentials("provider \(provider.name) has no email/password accounts")
        }
        let changed = try await accounts.changePassword(
            email: email,
            oldPassword: oldPassword,
            newPassword: newPassword
        )
        return Account(provider: provider.name, email: changed)
    }
}
