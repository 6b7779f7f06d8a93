/// Passwords and confirmation of email/password accounts without the current password: an administrator's reset,
/// the self-service reset by token, and the confirmation of new accounts (`AccountRecovering`).
extension SessionRegistry {
    /// Sets a new password for an account without its current one (an administrator's reset) and ends every session
    /// of that account on the device.
    package func resetPassword(
        provider name: String?,
        email: String,
        newPassword: String
    ) async throws -> PasswordResetChange {
        try self.requireRunning()
        let accounts = try self.recoveringProvider(named: name)
        let reset = try await accounts.resetPassword(email: email, newPassword: newPassword)
        return try await self.commit(reset, at: accounts.name)
    }

    /// Sets a new password with a reset token and ends every session of the account on the device.
    package func completePasswordReset(
        provider name: String?,
        token: String,
        newPassword: String
    ) async throws -> PasswordResetChange {
        try self.requireRunning()
        let accounts = try self.recoveringProvider(named: name)
        let reset = try await accounts.completePasswordReset(token: token, newPassword: newPassword)
        return try await self.commit(reset, at: accounts.name)
    }

    /// Runs the reset hook for the account with this email, if any; the same answer either way: the provider's name.
    package func requestPasswordReset(provider name: String?, email: String) async throws -> String {
        try self.requireRunning()
        let accounts = try self.recoveringProvider(named: name)
        try await accounts.requestPasswordReset(email: email)
        return accounts.name
    }

    /// Confirms the account a confirmation token was issued for.
    package func confirmUser(provider name: String?, token: String) async throws -> Account {
        try self.requireRunning()
        let accounts = try self.recoveringProvider(named: name)
        let email = try await accounts.confirm(token: token)
        self.logger.debug("account confirmed", metadata: ["provider": "\(accounts.name)"])
        return Account(provider: accounts.name, email: email)
    }

    /// Runs the confirmation hook again for the unconfirmed account with this email, if any; the same answer either
    /// way: the provider's name.
    package func resendConfirmation(provider name: String?, email: String) async throws -> String {
        try self.requireRunning()
        let accounts = try self.recoveringProvider(named: name)
        try await accounts.resendConfirmation(email: email)
        return accounts.name
    }

    private func recoveringProvider(named name: String?) throws -> any AccountRecovering {
        let provider = try self.provider(named: name)
        guard let accounts = provider as? any AccountRecovering else {
            throw ProviderError.unsupportedCredentials("provider \(provider.name) has no email/password accounts")
        }
        return accounts
    }

    /// Commits a reset: the provider's write (new password, the account's refresh grants deleted, the token
    /// consumed) and the end of every session of the account on the device, in one transaction. Each user whose
    /// session is the account goes `logged_out` with reason `password_reset`; the seats they were active on get their
    /// successors as with any logout.
    private func commit(_ reset: PasswordReset, at provider: String) async throws -> PasswordResetChange {
        // State may have changed while the provider hashed the password: the users are found inside the change.
        let (loggedOut, draft) = try await self.mutate { draft -> [String] in
            draft.pendingWrites.append(reset.write)
            let sessions = self.state.users.filter {
                $0.provider == provider && $0.subject == reset.subject && $0.state == .loggedIn
            }
            for user in sessions { self.endSession(of: user, reason: .passwordReset, in: &draft) }
            // The write deletes the account's refresh grants in this same transaction: nothing is left to revoke.
            draft.revocations = []
            return sessions.map(\.id).sorted()
        }
        self.logger.notice(
            "password reset",
            metadata: ["provider": "\(provider)", "logged_out": "\(loggedOut.joined(separator: ","))"]
        )
        return PasswordResetChange(
            provider: provider,
            email: reset.email,
            loggedOut: loggedOut,
            generation: draft.generation
        )
    }
}
