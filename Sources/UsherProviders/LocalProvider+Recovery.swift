import Logging
import UsherCore
import UsherProtocol
import UsherStore

/// `[providers.NAME.registration]`: how new accounts are confirmed and forgotten passwords reset.
package struct AccountRegistrationConfiguration: Sendable, Hashable {
    /// `confirm`: `auto` (an account can log in as soon as it is registered) or `hook` (it waits for `confirm_user`
    /// with the token `confirm_hook` delivered).
    package enum Confirmation: String, Sendable, Hashable {
        case auto
        case hook
    }

    package var confirm = Confirmation.auto
    /// `confirm_hook`: the command that delivers confirmation tokens; required with `confirm = "hook"`.
    package var confirmHook: FunctionHookConfiguration?
    /// `reset_hook`: the command that delivers password-reset tokens; without it, `request_password_reset` is
    /// `unsupported_credentials`.
    package var resetHook: FunctionHookConfiguration?
    /// `confirm_token_lifetime`.
    package var confirmTokenLifetimeMilliseconds: Int64 = 24 * 3_600_000
    /// `reset_token_lifetime`.
    package var resetTokenLifetimeMilliseconds: Int64 = 3_600_000

    package init() {}
}

/// Confirmation of new accounts and passwords set without the current one (`AccountRecovering`).
///
/// Tokens are 256 random bits (`SecureRandom`), handed only to the hook (on its standard input) and stored only as
/// their SHA-256. `request_password_reset` and `resend_confirmation` do the same thing for an email without an
/// account as for one that needs nothing: nothing, and the same answer.
extension LocalProvider: AccountRecovering {
    package var confirmsAccounts: Bool { self.configuration.registration.confirm == .hook && self.confirmHook != nil }

    /// `register` with `confirm = "hook"`: the account and its confirmation token are stored together, then the hook
    /// delivers the token.
    func registerUnconfirmed(_ account: LocalAccount) async throws -> String {
        guard let hook = self.confirmHook else { throw ProviderError.registrationDisabled }
        let token = SecureRandom.token(byteCount: 32)
        guard
            try await self.database.createUnconfirmedLocalAccount(
                provider: self.name,
                account: account,
                tokenHash: SecureRandom.sha256(token),
                expiresAt: self.clock.now().adding(
                    milliseconds: self.configuration.registration.confirmTokenLifetimeMilliseconds
                )
            )
        else { throw ProviderError.accountExists }
        do {
            try await hook.deliver(email: account.email, token: token)
        } catch {
            throw ProviderError.unavailable(
                "the account was created, but its confirmation could not be delivered (\(Self.reason(error))); "
                    + "ask for it again with resend_confirmation"
            )
        }
        return account.email
    }

    package func resetPassword(email: String, newPassword: String) async throws -> PasswordReset {
        try Self.validatePassword(newPassword, parameter: "new_password")
        guard let account = try await self.database.localAccount(provider: self.name, email: email) else {
            throw ProviderError.invalidCredentials("no account of provider \(self.name) has this email")
        }
        return PasswordReset(
            subject: account.id,
            email: account.email,
            write: LocalPasswordReset(
                provider: self.name,
                accountID: account.id,
                passwordHash: try await self.hasher.hash(newPassword),
                tokenHash: nil,
                now: self.clock.now()
            )
        )
    }

    package func completePasswordReset(token: String, newPassword: String) async throws -> PasswordReset {
        let tokenHash = SecureRandom.sha256(token)
        guard
            let account = try await self.database.account(
                provider: self.name,
                tokenHash: tokenHash,
                purpose: .reset,
                now: self.clock.now()
            )
        else { throw ProviderError.invalidToken(LocalPasswordReset.invalidToken) }
        try Self.validatePassword(newPassword, parameter: "new_password")
        // The token is consumed by the write, in the registry's transaction; used meanwhile, the write fails it.
        return PasswordReset(
            subject: account.id,
            email: account.email,
            write: LocalPasswordReset(
                provider: self.name,
                accountID: account.id,
                passwordHash: try await self.hasher.hash(newPassword),
                tokenHash: tokenHash,
                now: self.clock.now()
            )
        )
    }

    package func requestPasswordReset(email: String) async throws {
        guard let hook = self.resetHook else {
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) has no reset_hook: self-service password resets are turned off"
            )
        }
        guard let account = try await self.database.localAccount(provider: self.name, email: email) else { return }
        await self.send(.reset, to: account, by: hook)
    }

    package func confirm(token: String) async throws -> String {
        guard
            let account = try await self.database.confirmLocalAccount(
                provider: self.name,
                tokenHash: SecureRandom.sha256(token),
                now: self.clock.now()
            )
        else { throw ProviderError.invalidToken(LocalPasswordReset.invalidToken) }
        return account.email
    }

    package func resendConfirmation(email: String) async throws {
        guard self.confirmsAccounts, let hook = self.confirmHook else {
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) confirms accounts when they are registered (confirm = \"auto\")"
            )
        }
        guard let account = try await self.database.localAccount(provider: self.name, email: email),
            !account.confirmed
        else { return }
        await self.send(.confirm, to: account, by: hook)
    }

    /// Stores a new token of `purpose` for the account (the old one stops working) and has the hook deliver it. A
    /// failed delivery is logged (by the hook) and not reported: the answer must be the same as for an email without
    /// an account.
    private func send(_ purpose: AccountTokenPurpose, to account: LocalAccount, by hook: DeliveryHook) async {
        let token = SecureRandom.token(byteCount: 32)
        let lifetime =
            purpose == .confirm
            ? self.configuration.registration.confirmTokenLifetimeMilliseconds
            : self.configuration.registration.resetTokenLifetimeMilliseconds
        do {
            guard
                try await self.database.storeAccountToken(
                    provider: self.name,
                    accountID: account.id,
                    purpose: purpose,
                    tokenHash: SecureRandom.sha256(token),
                    expiresAt: self.clock.now().adding(milliseconds: lifetime)
                )
            else { return }
            try await hook.deliver(email: account.email, token: token)
        } catch {
            // The hook logged its failure; a store failure is logged here.
            if !(error is ProviderError) { self.logger.error("cannot store an account token: \(error)") }
        }
    }
}

extension LocalProvider {
    /// What a failed delivery says (never a secret: the hook's errors name the run's outcome, not its input).
    fileprivate static func reason(_ error: any Error) -> String {
        guard case .unavailable(let message)? = error as? ProviderError else { return "\(error)" }
        return message
    }
}
