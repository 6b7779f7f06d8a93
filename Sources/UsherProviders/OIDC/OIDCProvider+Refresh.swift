import Logging
import Synchronization
import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Refreshing and revoking a session's tokens.
extension OIDCProvider {
    // MARK: - Refresh

    package func refresh(_ session: ProviderSession) async throws -> RefreshedSession {
        let discovered: Discovered
        do {
            discovered = try await self.discovered()
        } catch {
            throw ProviderError.unavailable(Self.describe(error))
        }
        if session.providerData == Self.clientCredentialsData {
            return try await self.renewClientCredentials(session, discovered)
        }
        guard let refreshToken = session.tokens.refreshToken else {
            throw ProviderError.sessionRevoked("the session has no refresh token")
        }
        let response: OIDCTokenResponse
        do {
            response = try await self.tokenResponse(
                discovered.metadata,
                [("grant_type", "refresh_token"), ("refresh_token", refreshToken)],
                dpopKey: self.dpopKey(refreshing: session)
            )
        } catch {
            throw Self.refreshError(error)
        }
        if let idToken = response.idToken {
            // A refreshed ID token must be about the same person (OpenID Connect Core §12.2); no nonce this time.
            do {
                let claims = try await self.verifiedIDToken(idToken, nonce: nil, discovered)
                guard claims["sub"]?.stringValue == session.subject else {
                    throw ProviderError.unavailable("the refreshed ID token is about another subject")
                }
            } catch {
                throw ProviderError.unavailable(Self.describe(error))
            }
        }
        return RefreshedSession(tokens: response.tokenSet(now: self.clock.now()), providerData: nil)
    }

    /// How a failed refresh counts: `invalid_grant` and a bare 400 or 401 end the session; `invalid_client` and
    /// `unauthorized_client` are the daemon's configuration at fault (a wrong or rotated client secret, a client not
    /// allowed the grant), not the session's, so the user stays logged in and the registry waits long before trying
    /// again; any other 4xx but 408 and 429 is a refusal (`rejected`: the registry retries once, and ends the session
    /// when the same refusal comes again); everything else (network, 5xx, 408, 429, garbage) is transient and retried,
    /// keeping the user logged in.
    static func refreshError(_ failure: OIDCFailure) -> ProviderError {
        switch failure {
        case .oauth(_, "invalid_grant"?, let description):
            return .sessionRevoked("the provider rejected the refresh token" + (description.map { ": \($0)" } ?? ""))
        case .oauth(_, let error?, _) where error == "invalid_client" || error == "unauthorized_client":
            return .misconfigured("the provider refused the client: \(failure.summary)")
        case .oauth(let status, nil, _) where status == 400 || status == 401:
            return .sessionRevoked("the provider rejected the refresh token (HTTP \(status))")
        case .oauth(let status, let error, _) where (400..<500).contains(status) && status != 408 && status != 429:
            return .rejected(refusal: "HTTP \(status) \(error ?? "")", message: failure.summary)
        default:
            return .unavailable(failure.summary)
        }
    }

    func renewClientCredentials(
        _ session: ProviderSession,
        _ discovered: Discovered
    ) async throws -> RefreshedSession {
        do {
            var tokens = try await self.tokenResponse(
                discovered.metadata,
                [("grant_type", "client_credentials"), ("scope", self.serviceScope)],
                dpopKey: self.dpopKey(refreshing: session)
            )
            .tokenSet(now: self.clock.now())
            tokens.refreshToken = tokens.refreshToken ?? session.tokens.refreshToken
            return RefreshedSession(tokens: tokens, providerData: Self.clientCredentialsData)
        } catch let failure {
            // A client no longer allowed this grant, or refused without a reason: the service account's session is
            // over. A refused client secret (invalid_client) is a configuration error like any refresh's.
            if case .oauth(_, let error, _) = failure, error == "unauthorized_client" || error == nil {
                throw ProviderError.sessionRevoked("the provider no longer accepts the client: \(failure.summary)")
            }
            throw Self.refreshError(failure)
        }
    }

    // MARK: - Revocation (RFC 7009)

    package func revoke(_ session: ProviderSession) async -> Bool {
        guard let discovered = try? await self.discovered() else {
            self.logger.notice(
                "revocation skipped: the provider is unreachable",
                metadata: ["user.id": "\(session.userID)"]
            )
            return false
        }
        guard let endpoint = discovered.metadata.revocationEndpoint else {
            self.logger.debug("the provider has no revocation endpoint", metadata: ["user.id": "\(session.userID)"])
            return false
        }
        let usesRefreshToken = session.providerData != Self.clientCredentialsData && session.tokens.hasRefreshToken
        let (token, hint) =
            usesRefreshToken
            ? (session.tokens.refreshToken ?? "", "refresh_token") : (session.tokens.accessToken, "access_token")
        let (form, headers) = self.authenticatedForm([("token", token), ("token_type_hint", hint)])
        do {
            let response = try await self.http.post(endpoint, form: form, headers: headers)
            let revoked = response.status == 200
            self.logger.info(
                revoked ? "tokens revoked" : "revocation refused",
                metadata: ["user.id": "\(session.userID)", "status": "\(response.status)", "token": "\(hint)"]
            )
            return revoked
        } catch {
            self.logger.notice(
                "revocation failed",
                metadata: ["user.id": "\(session.userID)", "error": "\(error.summary)"]
            )
            return false
        }
    }
}
