import UsherProtocol

/// Accounts at providers that keep them: registration and a password change (the resets are in
/// `SessionRegistry+Passwords.swift`).
extension SessionRegistry {
    /// Registers an email/password account at the provider (the default one when nil).
    package func register(
        provider name: String?,
        email: String,
        password: String
    ) async throws
        -> RegisterRequest.Result
    {
        try self.requireRunning()
        let provider = try self.provider(named: name)
        guard let registering = provider as? any AccountRegistering else {
            throw ProviderError.unsupportedCredentials("provider \(provider.name) does not support registration")
        }
        let normalizedEmail = try await registering.register(email: email, password: password)
        // An account that waits for its confirmation says so; otherwise the answer is as it always was.
        let waits = (registering as? any AccountRecovering)?.confirmsAccounts == true
        return RegisterRequest.Result(provider: provider.name, email: normalizedEmail, confirmed: waits ? false : nil)
    }

    /// Sets a new password for an email/password account, given its current one. The account's sessions on the device
    /// stay logged in: the caller proved it knows the password (an administrative reset is what ends them).
    package func changePassword(
        provider name: String?,
        email: String,
        oldPassword: String,
        newPassword: String
    ) async throws -> ChangePasswordRequest.Result {
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
        return ChangePasswordRequest.Result(provider: provider.name, email: changed)
    }
}
