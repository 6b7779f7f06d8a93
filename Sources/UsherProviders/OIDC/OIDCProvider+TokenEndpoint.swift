import Logging
import Synchronization
import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The token endpoint, and the identity the provider's answer proves (ID token, userinfo).
extension OIDCProvider {
    // MARK: - Token endpoint

    /// The form fields and headers of a request authenticated as the configured client.
    func authenticatedForm(_ fields: [(String, String)]) -> ([(String, String)], [(String, String)]) {
        let fields = fields.filter { !$0.1.isEmpty || $0.0 != "scope" }
        switch (self.configuration.clientAuthentication, self.configuration.clientSecret) {
        case (.clientSecretBasic, let secret?):
            let credentials = FormEncoding.escape(self.configuration.clientID) + ":" + FormEncoding.escape(secret)
            return (fields, [("Authorization", "Basic " + Data(credentials.utf8).base64EncodedString())])
        case (.clientSecretPost, let secret?):
            return (fields + [("client_id", self.configuration.clientID), ("client_secret", secret)], [])
        default:
            return (fields + [("client_id", self.configuration.clientID)], [])
        }
    }

    /// A token endpoint request whose failures keep their OAuth detail (device polling, refresh), with a DPoP proof
    /// of `dpopKey` when there is one: the answer's tokens are then bound to that key if the provider says so.
    func tokenResponse(
        _ metadata: OIDCMetadata,
        _ fields: [(String, String)],
        dpopKey: DPoPKey? = nil
    ) async throws(OIDCFailure) -> OIDCTokenResponse {
        let (form, headers) = self.authenticatedForm(fields)
        let response = try await self.postTokenRequest(metadata, form: form, headers: headers, dpopKey: dpopKey)
        guard response.status == 200 else { throw response.oauthError() }
        var parsed = try OIDCTokenResponse.parse(
            response.jsonObject(what: "the token response"),
            sentProof: dpopKey != nil
        )
        // A provider that does not bind tokens answers Bearer ones (RFC 9449 section 5): the session then has no key.
        parsed.dpopKey = parsed.isDPoPBound ? dpopKey : nil
        return parsed
    }

    /// A token endpoint request of a login: failures become the login's errors. With `dpop = true`, the login's
    /// tokens are bound to a new key.
    func token(
        _ metadata: OIDCMetadata,
        _ fields: [(String, String)]
    ) async throws(ProviderError) -> OIDCTokenResponse {
        do {
            return try await self.tokenResponse(metadata, fields, dpopKey: self.newDPoPKey)
        } catch {
            let grant = fields.first { $0.0 == "grant_type" }?.1 ?? "?"
            self.logger.notice("token request failed", metadata: ["grant": "\(grant)", "error": "\(error.summary)"])
            throw error.providerError
        }
    }

    // MARK: - Identity

    /// Who a token response is about: the verified ID token's claims, completed by userinfo when the provider has
    /// it. Without an ID token, userinfo alone must say who it is.
    func authentication(
        from response: OIDCTokenResponse,
        kind: String,
        nonce: String?,
        _ discovered: Discovered
    ) async throws(ProviderError) -> Authentication {
        var claims: [String: JSONValue] = [:]
        if let idToken = response.idToken {
            claims = try await self.verifiedIDToken(idToken, nonce: nonce, discovered)
        }
        if let endpoint = discovered.metadata.userinfoEndpoint {
            var userinfo: [String: JSONValue]?
            do {
                userinfo = try await self.userinfo(
                    endpoint,
                    accessToken: response.accessToken,
                    dpopKey: response.dpopKey
                )
            } catch {
                // With an ID token, userinfo only completes the profile; without one, it is who the user is.
                guard claims["sub"] != nil else { throw error }
                self.logger.debug("userinfo unavailable; using the ID token alone", metadata: ["error": "\(error)"])
            }
            if let userinfo {
                if let subject = claims["sub"], userinfo["sub"] != subject {
                    throw .providerError(
                        error: "invalid_userinfo",
                        description: "userinfo is about another subject than the ID token"
                    )
                }
                // The ID token's claims win; userinfo fills in what it lacks.
                claims.merge(userinfo) { fromToken, _ in fromToken }
            }
        }
        guard case .string(let subject)? = claims["sub"], !subject.isEmpty else {
            throw .providerError(
                error: "no_identity",
                description: "the provider returned neither an ID token nor userinfo with a sub (is openid in scopes?)"
            )
        }
        return Authentication(
            subject: subject,
            kind: kind,
            email: Self.verifiedEmail(claims),
            name: claims["name"]?.stringValue ?? claims["preferred_username"]?.stringValue,
            tokens: response.tokenSet(now: self.clock.now()),
            providerData: nil,
            profile: UserClaims.profile(from: claims),
            customData: self.customData(from: claims, accessToken: response.accessToken)
        )
    }

    /// The `email` claim, only when `email_verified` is JSON `true` (`EmailAddress.verified`, the rule
    /// `refresh_profile` follows too).
    static func verifiedEmail(_ claims: [String: JSONValue]) -> String? {
        EmailAddress.verified(email: claims["email"], emailVerified: claims["email_verified"])
    }

    func verifiedIDToken(
        _ token: String,
        nonce: String?,
        _ discovered: Discovered
    ) async throws(ProviderError) -> [String: JSONValue] {
        do throws(JWTError) {
            let claims = try await discovered.verifier.verify(token, nonce: nonce)
            guard case .string? = claims["sub"] else { throw JWTError.missingClaim("sub") }
            return claims
        } catch .keysUnavailable(let reason) {
            throw .unavailable("the provider's signing keys are unavailable: \(reason)")
        } catch {
            self.logger.notice("ID token rejected", metadata: ["reason": "\(error)"])
            throw .providerError(error: "invalid_id_token", description: "\(error)")
        }
    }

    /// Userinfo, asked with the access token: as a bearer token, or with a proof of `dpopKey` for a DPoP-bound one.
    func userinfo(
        _ endpoint: String,
        accessToken: String,
        dpopKey: DPoPKey?
    ) async throws(ProviderError) -> [String: JSONValue] {
        do throws(OIDCFailure) {
            let response =
                if let dpopKey {
                    try await self.getWithProof(endpoint, accessToken: accessToken, key: dpopKey)
                } else {
                    try await self.http.get(endpoint, bearerToken: accessToken)
                }
            guard response.status == 200 else { throw response.oauthError() }
            return try response.jsonObject(what: "userinfo")
        } catch {
            throw error.providerError
        }
    }
}
