import UsherCore
import UsherProtocol

/// The throttle as `login` and `register` use it: which account an attempt names, what an error says.
extension LoginThrottle {
    /// The account a `login` attempt names before its credentials are checked, for the per-account count: the email
    /// of `email_password`, the username of an OpenID Connect `password` login; nil for every other type.
    package static func account(of credentials: [String: JSONValue]) -> String? {
        switch credentials["type"]?.stringValue {
        case CredentialType.emailPassword: credentials["email"]?.stringValue
        case "password": credentials["username"]?.stringValue
        default: nil
        }
    }

    /// What an error says about the credentials: refused credentials, `register`'s existing account (a probe for
    /// which emails have accounts) and another account than `expect_email` are failures; anything else taught nothing.
    package static func outcome(of error: any Error) -> Outcome {
        // Another account's credentials presented as the expected one's (`expect_email`): a failed login of it.
        if case .identityMismatch? = error as? SessionError { return .failed }
        guard let error = error as? ProviderError else { return .inconclusive }
        switch error {
        case .invalidCredentials, .accountExists, .invalidToken: return .failed
        default: return .inconclusive
        }
    }

    /// Runs a `login` under the throttle. Anonymous logins prove nothing and are never throttled. With
    /// `expectedAccount` (`expect_email`), the attempt is that account's: credentials of another account presented for
    /// it count as its failed login.
    package func login<Result>(
        credentials: [String: JSONValue],
        peer: UInt32,
        expectedAccount: String? = nil,
        _ body: () async throws -> Result
    ) async throws -> Result {
        guard credentials["type"]?.stringValue != CredentialType.anonymous || expectedAccount != nil else {
            return try await body()
        }
        return try await self.attempt(
            account: expectedAccount ?? Self.account(of: credentials),
            peer: peer,
            classify: Self.outcome(of:),
            body
        )
    }

    /// Runs a `register` under the throttle: a throttled peer or email is refused before the password is hashed.
    package func register<Result>(
        email: String,
        peer: UInt32,
        _ body: () async throws -> Result
    ) async throws -> Result {
        try await self.attempt(account: email, peer: peer, classify: Self.outcome(of:), body)
    }

    /// Runs a `change_password` under the throttle: a wrong current password is a failed login of that account.
    package func changePassword<Result>(
        email: String,
        peer: UInt32,
        _ body: () async throws -> Result
    ) async throws -> Result {
        try await self.attempt(account: email, peer: peer, classify: Self.outcome(of:), body)
    }

    /// Runs a `request_password_reset` or `resend_confirmation` under the throttle, so that they cannot flood the
    /// hook: every request that reaches the provider counts as a failure, against the email (a count of its own,
    /// `hook:EMAIL`, apart from the logins of that account, so that asking for mail never locks the account's logins)
    /// and against the peer uid (the same count as its failed logins). The account's owner (the uid that last logged
    /// in to it) has a hook count of its own, as it has for logins: another uid asking for the owner's mail again and
    /// again never locks the owner out of its own reset or confirmation mail.
    package func hookRequest<Result>(
        email: String,
        peer: UInt32,
        _ body: () async throws -> Result
    ) async throws -> Result {
        let ticket = try self.begin(account: "hook:" + email, peer: peer, ownedAs: email)
        do {
            let result = try await body()
            await self.persist(self.finish(ticket, .failed))
            return result
        } catch {
            // Malformed parameters or a provider without a hook ran nothing: they count for nothing.
            await self.persist(self.finish(ticket, Self.outcome(of: error)))
            throw error
        }
    }

    /// Runs a `confirm_user`, `complete_password_reset` or `reset_password` under the throttle: a refused token, or an
    /// email with no account, is a failure of the peer uid (a token names no account until it is found; an
    /// administrator's reset is not a login of the account, and must not make the administrator its owner).
    package func peerAttempt<Result>(peer: UInt32, _ body: () async throws -> Result) async throws -> Result {
        try await self.attempt(account: nil, peer: peer, classify: Self.outcome(of:), body)
    }
}
