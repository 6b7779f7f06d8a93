import UsherCore
import UsherProtocol

/// DPoP (RFC 9449) at an OpenID provider with `dpop = true`: proofs on token requests, so that the provider binds the
/// tokens to the session's key, and on the session's own resource requests (userinfo); a nonce the provider asks for
/// (`use_dpop_nonce`) is put in a second proof, once.
extension OIDCProvider {
    /// A new key for the tokens of a login, or nil when the provider does not have `dpop = true`.
    var newDPoPKey: DPoPKey? { self.configuration.dpop ? DPoPKey.generate() : nil }

    /// The key a refresh of `session` proves: the session's own, a new one for a session from before `dpop` was
    /// turned on, none once it is turned off.
    func dpopKey(refreshing session: ProviderSession) -> DPoPKey? {
        self.configuration.dpop ? session.tokens.dpopKey ?? DPoPKey.generate() : nil
    }

    /// A proof for `method` `url` (its query and fragment left out, as `htu` wants) with `key`.
    ///
    /// - Throws: `OIDCFailure.unavailable` in the case jwt-kit cannot sign (it does not, for a key swift-crypto made),
    ///   so that the request is tried again later, as when the provider cannot be reached.
    func dpopProof(
        _ key: DPoPKey,
        method: String,
        url: String,
        nonce: String?,
        accessToken: String?
    ) async throws(OIDCFailure) -> String {
        let end = url.firstIndex { $0 == "?" || $0 == "#" } ?? url.endIndex
        do {
            return try await key.proof(
                method: method,
                url: String(url[..<end]),
                nonce: nonce,
                accessToken: accessToken,
                issuedAt: self.clock.now()
            )
        } catch {
            throw .unavailable("the DPoP proof could not be signed: \(error)")
        }
    }

    /// The nonce to put in a second proof, when `response` refused the first for the lack of it: an authorization
    /// server answers 400 `use_dpop_nonce` (section 8), a resource server 401 with a `DPoP` challenge naming it
    /// (section 9); both send the nonce in `DPoP-Nonce`. Nil for any other answer, or a nonce no proof can carry.
    static func demandedNonce(_ response: OIDCHTTP.Response) -> String? {
        guard let nonce = response.dpopNonce, (1...1024).contains(nonce.utf8.count),
            nonce.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != 0x22 && $0 != 0x5C })
        else { return nil }
        if response.status == 400, case .oauth(_, "use_dpop_nonce"?, _) = response.oauthError() { return nonce }
        if response.status == 401, let challenge = response.challenge, challenge.contains("use_dpop_nonce") {
            return nonce
        }
        return nil
    }

    /// A token endpoint request with a proof of `key` (none without one), asked again once with the nonce the
    /// provider demands.
    func postTokenRequest(
        _ metadata: OIDCMetadata,
        form: [(String, String)],
        headers: [(String, String)],
        dpopKey key: DPoPKey?
    ) async throws(OIDCFailure) -> OIDCHTTP.Response {
        guard let key else { return try await self.http.post(metadata.tokenEndpoint, form: form, headers: headers) }
        var nonce: String? = nil
        while true {
            let proof = try await self.dpopProof(
                key,
                method: "POST",
                url: metadata.tokenEndpoint,
                nonce: nonce,
                accessToken: nil
            )
            let response = try await self.http.post(
                metadata.tokenEndpoint,
                form: form,
                headers: headers + [("DPoP", proof)]
            )
            guard nonce == nil, let demanded = Self.demandedNonce(response) else { return response }
            nonce = demanded
        }
    }

    /// A GET of `url` with the session's DPoP-bound `accessToken` and a proof of `key`, asked again once with the
    /// nonce the server demands.
    func getWithProof(_ url: String, accessToken: String, key: DPoPKey) async throws(OIDCFailure) -> OIDCHTTP.Response {
        var nonce: String? = nil
        while true {
            let proof = try await self.dpopProof(key, method: "GET", url: url, nonce: nonce, accessToken: accessToken)
            let response = try await self.http.get(url, dpopToken: accessToken, proof: proof)
            guard nonce == nil, let demanded = Self.demandedNonce(response) else { return response }
            nonce = demanded
        }
    }
}
