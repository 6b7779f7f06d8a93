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

    /// What an error says about the credentials: refused credentials and `register`'s existing account (a probe for
    /// which emails have accounts) are failures; anything else taught nothing.
    package static func outcome(of error: any Error) -> Outcome {
        guard let error = error as? ProviderError else { return .inconclusive }
        switch error {
        case .invalidCredentials, .accountExists: return .failed
        default: return .inconclusive
        }
    }

    /// Runs a `login` under the throttle. Anonymous logins prove nothing and are never throttled.
    package func login<Result>(
        credentials: [String: JSONValue],
        peer: UInt32,
        _ body: () async throws -> Result
    ) async throws -> Result {
        guard credentials["type"]?.stringValue != CredentialType.anonymous else { return try await body() }
        return try await self.attempt(
            account: Self.account(of: credentials),
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
}
