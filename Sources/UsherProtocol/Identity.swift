/// One way of proving who a user is: an account at a provider, as `{provider, kind, subject}`. Never a secret.
///
/// A user has one or more (`User.identities`): the one its session was opened with, and those linked to it
/// (`link_credentials`). Logging in with any of them finds the same user.
public struct Identity: Sendable, Hashable, Codable {
    public var provider: String
    /// The credential type that proves it (`email_password`, `anonymous`, `authorization_code`, ...).
    public var kind: String
    /// Stable for one account at the provider.
    public var subject: String

    public init(provider: String, kind: String, subject: String) {
        self.provider = provider
        self.kind = kind
        self.subject = subject
    }

    public var isAnonymous: Bool { self.kind == "anonymous" }

    /// Whether two identities are the same account (the kind is how it was proven, not who it is).
    public func isSameAccount(as other: Identity) -> Bool {
        self.provider == other.provider && self.subject == other.subject
    }
}
