import UsherCore
import UsherProtocol

/// Narrowed tokens of local sessions: the daemon signs them itself, as it signs the session's own.
extension LocalProvider: TokenNarrowingProvider {
    package func narrowingUsesRefreshToken(_ narrowing: TokenNarrowing, session: ProviderSession) -> Bool { false }

    /// A token with `aud` = the audience, `scope` = the scopes, `azp` = the program, and the session's `cnf` when
    /// its tokens are DPoP-bound; it names the user (`sub`) and nothing else about them (no `email`), and expires no
    /// later than the session's own access token.
    package func narrow(_ session: ProviderSession, to narrowing: TokenNarrowing) async throws -> NarrowedGrant {
        let now = self.clock.now()
        let expiresAt = min(
            now.adding(milliseconds: self.configuration.accessTokenLifetimeMilliseconds),
            session.tokens.expiresAt
        )
        guard expiresAt > now else { throw SessionError.userLoggedOut(session.userID) }
        var claims: [String: JSONValue] = [
            "iss": .string(self.configuration.issuer),
            "sub": .string(session.userID),
            "iat": .int(now.secondsSinceEpoch),
            "exp": .int(expiresAt.secondsSinceEpoch),
            "jti": .string(SecureRandom.token(byteCount: 16)),
        ]
        if let audience = narrowing.audience { claims["aud"] = .string(audience) }
        if let scopes = narrowing.scopes { claims["scope"] = .string(scopes.joined(separator: " ")) }
        if let party = narrowing.party { claims["azp"] = .string(party) }
        if let key = session.tokens.dpopKey { claims["cnf"] = .object(["jkt": .string(key.thumbprint)]) }
        return NarrowedGrant(
            token: NarrowedToken(
                accessToken: try await self.signer.sign(claims: claims),
                tokenType: session.tokens.tokenType,
                issuedAt: now,
                expiresAt: expiresAt,
                scopes: narrowing.scopes
            )
        )
    }
}
