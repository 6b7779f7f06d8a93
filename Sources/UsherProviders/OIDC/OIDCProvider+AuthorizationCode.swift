import Logging
import Synchronization
import UsherCore
import UsherLoopback
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The authorization code flow with PKCE, for a browser on this device.
extension OIDCProvider {
    // MARK: Authorization code (RFC 6749 §4.1, PKCE RFC 7636, native apps RFC 8252)

    package func beginLogin(type: LoginFlow, redirectURI: String?, owner: UInt32) async throws -> StartedLogin {
        switch type {
        case .authorizationCode: try await self.beginAuthorization(redirectURI: redirectURI, owner: owner)
        case .deviceCode: try await self.beginDeviceLogin(owner: owner)
        }
    }

    func beginAuthorization(redirectURI requested: String?, owner: UInt32) async throws -> StartedLogin {
        let discovered = try await self.requireSupport(of: Kind.authorizationCode)
        guard let endpoint = discovered.metadata.authorizationEndpoint,
            let configured = LoopbackRedirect(self.configuration.redirectURI)
        else { throw ProviderError.unsupportedCredentials("provider \(self.name) has no authorization endpoint") }
        let redirect: LoopbackRedirect
        if let requested {
            guard let parsed = LoopbackRedirect(requested), configured.admits(parsed) else {
                throw ProviderError.invalidParams(
                    parameter: "redirect_uri",
                    "params.redirect_uri must match the configured \(self.configuration.redirectURI) (any port when "
                        + "it is 0)"
                )
            }
            redirect = parsed
        } else if configured.port == 0 {
            guard let port = await LoopbackSocket.freePort(host: configured.host) else {
                throw ProviderError.unavailable("no free loopback port for the redirect")
            }
            redirect = LoopbackRedirect(host: configured.host, port: port, path: configured.path)
        } else {
            redirect = configured
        }
        let state = SecureRandom.token()
        let nonce = SecureRandom.token()
        let verifier = SecureRandom.token()
        let challenge = SecureRandom.sha256(verifier)
        let now = self.clock.now()
        let expiresAt = now.adding(milliseconds: Self.authorizationLifetimeMilliseconds)
        try self.state.withLock { stateValue throws(ProviderError) in
            stateValue.authorizations = stateValue.authorizations.filter { $0.value.expiresAt > now }
            // A uid at its quota makes way with its own oldest login, never another uid's; a full table that holds
            // none of this uid's refuses it.
            let own = stateValue.authorizations.filter { $0.value.owner == owner }
            if own.count >= Self.maximumPendingAuthorizationsPerUID
                || stateValue.authorizations.count >= Self.maximumPendingAuthorizations
            {
                guard let oldest = own.min(by: { $0.value.expiresAt < $1.value.expiresAt })?.key else {
                    throw ProviderError.unavailable("too many browser logins are under way; try again later")
                }
                stateValue.authorizations[oldest] = nil
            }
            stateValue.authorizations[state] = PendingAuthorization(
                owner: owner,
                nonce: nonce,
                codeChallenge: challenge,
                redirectURI: redirect.uri,
                expiresAt: expiresAt
            )
        }
        var parameters = [
            ("response_type", "code"), ("client_id", self.configuration.clientID), ("redirect_uri", redirect.uri),
            ("scope", self.scope), ("state", state), ("nonce", nonce),
            ("code_challenge", Base64URL.encode(challenge)), ("code_challenge_method", "S256"),
        ]
        if let prompt = self.configuration.authorizationPrompt { parameters.append(("prompt", prompt)) }
        let query =
            parameters
            .map { "\(FormEncoding.queryEscape($0.0))=\(FormEncoding.queryEscape($0.1))" }.joined(separator: "&")
        self.logger.debug("authorization code login started", metadata: ["redirect_uri": "\(redirect.uri)"])
        return StartedLogin(
            type: .authorizationCode,
            provider: self.name,
            authorizeURL: endpoint + (endpoint.contains("?") ? "&" : "?") + query,
            state: state,
            codeVerifier: verifier,
            redirectURI: redirect.uri,
            expiresAt: expiresAt
        )
    }

    func exchangeCode(
        code: String,
        verifier: String,
        redirectURI: String,
        state: String
    ) async throws(ProviderError) -> Authentication {
        let now = self.clock.now()
        // Single use: a state is consumed by the first attempt, right or wrong.
        guard let pending = self.state.withLock({ $0.authorizations.removeValue(forKey: state) }),
            pending.expiresAt > now
        else {
            throw .invalidCredentials(
                "the state does not belong to a login started with login_begin at \(self.name) (or it expired)"
            )
        }
        guard pending.redirectURI == redirectURI else {
            throw .invalidCredentials("the redirect_uri is not the one the login was started with")
        }
        guard SecureRandom.constantTimeEquals(SecureRandom.sha256(verifier), pending.codeChallenge) else {
            throw .invalidCredentials("the code_verifier does not match the login's code challenge")
        }
        let discovered = try await self.requireSupport(of: Kind.authorizationCode)
        let response = try await self.token(
            discovered.metadata,
            [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI),
                ("code_verifier", verifier),
            ]
        )
        return try await self.authentication(
            from: response,
            kind: Kind.authorizationCode,
            nonce: pending.nonce,
            discovered
        )
    }
}
