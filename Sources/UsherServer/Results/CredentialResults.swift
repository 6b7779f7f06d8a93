import UsherCore
import UsherProtocol

// The protocol's results for what the registry hands out (tokens, proofs, API keys, interactive logins): one
// initializer per core value, the only place each is mapped.

extension AccessTokenRequest.Result {
    /// `access_token`: the session's token or a narrowed one. On the event loop's hot path: copies references only.
    init(_ token: IssuedToken) {
        self.init(
            userID: token.userID,
            accessToken: token.accessToken,
            tokenType: token.tokenType,
            expiresAt: token.expiresAt,
            expiresIn: token.expiresIn,
            audience: token.audience,
            scopes: token.scopes
        )
    }
}

extension RefreshRequest.Result {
    init(_ refreshed: RefreshedTokens) {
        self.init(userID: refreshed.userID, accessTokenExpiresAt: refreshed.accessTokenExpiresAt)
    }
}

extension DPoPProofRequest.Result {
    init(_ proof: IssuedProof) {
        self.init(userID: proof.userID, proof: proof.proof, accessTokenExpiresAt: proof.accessTokenExpiresAt)
    }
}

extension CreateAPIKeyRequest.Result {
    init(_ key: IssuedAPIKey) {
        self.init(userID: key.userID, name: key.name, key: key.key, createdAt: key.createdAt)
    }
}

extension ListAPIKeysRequest.Result {
    init(_ keys: UserAPIKeys) {
        self.init(userID: keys.userID, apiKeys: keys.apiKeys)
    }
}

extension DeleteAPIKeyRequest.Result {
    init(_ key: APIKeyName) {
        self.init(userID: key.userID, name: key.name)
    }
}

extension LoginBeginRequest.Result {
    /// `status` is always `pending`: the login is under way until `login_wait` (or the redirect) completes it.
    init(_ login: StartedLogin) {
        self.init(
            type: LoginFlow(rawValue: login.type) ?? .authorizationCode,
            status: "pending",
            provider: login.provider,
            loginID: login.loginID,
            authorizeURL: login.authorizeURL,
            state: login.state,
            codeVerifier: login.codeVerifier,
            redirectURI: login.redirectURI,
            verificationURI: login.verificationURI,
            verificationURIComplete: login.verificationURIComplete,
            userCode: login.userCode,
            expiresAt: login.expiresAt
        )
    }
}
