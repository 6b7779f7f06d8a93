import UsherCore
import UsherProtocol

/// Narrowed tokens of OpenID Connect sessions (docs/least-privilege.md): by token exchange (RFC 8693) where the
/// provider takes it, else, with `narrow_by_refresh`, by a refresh grant with a narrower `scope` (RFC 6749 section 6)
/// for a narrowing of scopes alone; else `not_supported`, never the session's full token instead.
extension OIDCProvider: TokenNarrowingProvider {
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    /// Whether the provider says it takes token exchange (`grant_types`, else discovery): unlike logins, narrowing
    /// does not assume a grant that discovery does not list, as it falls back to another one.
    func exchangesTokens(_ metadata: OIDCMetadata) -> Bool {
        let grant = OIDCMetadata.tokenExchangeGrant
        return self.configuration.grantTypes?.contains(grant) ?? metadata.grantTypesSupported?.contains(grant) ?? false
    }

    package func narrowingUsesRefreshToken(_ narrowing: TokenNarrowing, session: ProviderSession) async throws -> Bool {
        let discovered = try await self.discovered()
        if self.exchangesTokens(discovered.metadata) { return false }
        guard narrowing.audience == nil else {
            throw SessionError.notSupported(
                "provider \(self.name) does not support token exchange (RFC 8693), which a token for an audience "
                    + "needs"
            )
        }
        guard self.configuration.narrowByRefresh else {
            throw SessionError.notSupported(
                "provider \(self.name) does not support token exchange (RFC 8693), and narrowing by refresh grant is "
                    + "off for it (narrow_by_refresh)"
            )
        }
        guard session.tokens.hasRefreshToken, session.providerData != Self.clientCredentialsData,
            self.supports(grant: "refresh_token", discovered.metadata)
        else {
            throw SessionError.notSupported(
                "provider \(self.name) supports neither token exchange (RFC 8693) nor, for this session, a refresh "
                    + "grant with a narrower scope"
            )
        }
        return true
    }

    package func narrow(_ session: ProviderSession, to narrowing: TokenNarrowing) async throws -> NarrowedGrant {
        let discovered = try await self.discovered()
        let key = self.configuration.dpop ? session.tokens.dpopKey : nil
        let byExchange = self.exchangesTokens(discovered.metadata)
        var fields: [(String, String)]
        if byExchange {
            fields = [
                ("grant_type", OIDCMetadata.tokenExchangeGrant),
                ("subject_token", session.tokens.accessToken),
                ("subject_token_type", Self.accessTokenType),
                ("requested_token_type", Self.accessTokenType),
            ]
            if let audience = narrowing.audience { fields.append(("audience", audience)) }
        } else {
            guard let refreshToken = session.tokens.refreshToken else {
                throw SessionError.notSupported("the session of \(session.userID) has no refresh token to narrow with")
            }
            fields = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
        }
        if let scopes = narrowing.scopes { fields.append(("scope", scopes.joined(separator: " "))) }
        let response: OIDCTokenResponse
        do {
            response = try await self.tokenResponse(discovered.metadata, fields, dpopKey: key)
        } catch {
            throw Self.narrowingError(error)
        }
        let granted = response.scope.map { $0.split(separator: " ").map(String.init).sorted() }
        if let asked = narrowing.scopes, let granted, !Set(granted).isSubset(of: asked) {
            // The provider ignored the narrower scope: handing its token out would give the program more than its
            // rule allows.
            throw SessionError.notSupported(
                "provider \(self.name) granted more scopes than asked for (\(granted.joined(separator: " ")))"
            )
        }
        let now = self.clock.now()
        let tokens = response.tokenSet(now: now)
        let token = NarrowedToken(
            accessToken: tokens.accessToken,
            tokenType: tokens.tokenType,
            issuedAt: now,
            expiresAt: tokens.expiresAt,
            scopes: granted ?? narrowing.scopes
        )
        guard !byExchange, let rotated = response.refreshToken, rotated != session.tokens.refreshToken else {
            return NarrowedGrant(token: token)
        }
        // The refresh grant rotated the session's refresh token: the session keeps its access token and takes the
        // new refresh token, stored as a refresh's would be.
        var sessionTokens = session.tokens
        sessionTokens.refreshToken = rotated
        sessionTokens.refreshExpiresAt = tokens.refreshExpiresAt ?? session.tokens.refreshExpiresAt
        return NarrowedGrant(token: token, session: RefreshedSession(tokens: sessionTokens, providerData: nil))
    }

    /// A refused narrowing fails the request and nothing else: the session stays as it is.
    static func narrowingError(_ failure: OIDCFailure) -> any Error {
        switch failure {
        case .unavailable(let message): return ProviderError.unavailable(message)
        case .oauth(_, let error?, let description)
        where ["invalid_target", "invalid_scope", "unauthorized_client", "unsupported_grant_type"].contains(error):
            return SessionError.notSupported(
                "the provider refused the narrowed token (\(error))" + (description.map { ": \($0)" } ?? "")
            )
        case .oauth(_, let error, let description):
            return ProviderError.providerError(error: error ?? "invalid_request", description: description)
        case .invalid(let message):
            return ProviderError.providerError(error: "invalid_response", description: message)
        }
    }
}
