import UsherProtocol

/// A token narrowed for one program: an audience, no more than some scopes, and (for tokens the daemon signs itself)
/// the program it is for, as `azp`.
package struct TokenNarrowing: Sendable, Hashable {
    package var audience: String?
    /// Sorted, without repeats.
    package var scopes: [String]?
    /// The program the token is for: tokens are kept per program, and the daemon's own name it in `azp`.
    package var party: String?

    package init(_ requested: TokenAudience, party: String? = nil) {
        self.audience = requested.audience
        self.scopes = requested.scopes
        self.party = party
    }
}

/// A narrowed access token, held in memory only (`NarrowedTokenCache`).
package struct NarrowedToken: Sendable {
    package var accessToken: String
    /// `Bearer`, or `DPoP` when it is bound to the session's key.
    package var tokenType: String
    package var issuedAt: Timestamp
    package var expiresAt: Timestamp
    /// The scopes it was granted (the provider may grant fewer than asked for, never more).
    package var scopes: [String]?

    package init(accessToken: String, tokenType: String, issuedAt: Timestamp, expiresAt: Timestamp, scopes: [String]?) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.scopes = scopes
    }

    /// The access token's lifetime in milliseconds.
    package var lifetimeMilliseconds: Int64 {
        self.expiresAt.millisecondsSinceEpoch - self.issuedAt.millisecondsSinceEpoch
    }
}

/// What a provider's narrowing produced: the token, and the session's tokens when the narrowing used (and the
/// provider rotated) the session's refresh token, to be stored as a refresh's are.
package struct NarrowedGrant: Sendable {
    package var token: NarrowedToken
    package var session: RefreshedSession?

    package init(token: NarrowedToken, session: RefreshedSession? = nil) {
        self.token = token
        self.session = session
    }
}

/// Providers that can give a session's user narrower tokens than the session's own (docs/least-privilege.md).
package protocol TokenNarrowingProvider: IdentityProvider {
    /// Whether narrowing to `narrowing` uses the session's refresh token (a refresh grant with a narrower scope),
    /// which a concurrent refresh of the session must not use at the same time.
    ///
    /// - Throws: `SessionError.notSupported` when the provider cannot narrow to it at all.
    func narrowingUsesRefreshToken(_ narrowing: TokenNarrowing, session: ProviderSession) async throws -> Bool

    /// A token for `narrowing`, from `session` (whose access token is valid).
    ///
    /// - Throws: `SessionError.notSupported` when the provider cannot narrow to it; `ProviderError` as `refresh` does.
    func narrow(_ session: ProviderSession, to narrowing: TokenNarrowing) async throws -> NarrowedGrant
}
