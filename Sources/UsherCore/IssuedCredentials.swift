import UsherProtocol

// What the registry hands out: access tokens, refreshes, DPoP proofs, API keys. Each is exactly the protocol's result
// (generated from varlink/io.usher.Session.varlink), under a name of its own in the core: one type, no mapping. Each
// `description` (beside the generated types) leaves the secret out.

/// An access token handed out for a user: the session's own, or a narrowed one (`audience`, `scopes`).
package typealias IssuedToken = AccessTokenRequest.Result

/// A user's tokens after `refresh`: when the access token now expires.
package typealias RefreshedTokens = RefreshRequest.Result

/// A DPoP proof for one request, bound to the access token that expires at `accessTokenExpiresAt`.
package typealias IssuedProof = DPoPProofRequest.Result

/// A new API key: the key itself is handed out here only, never again.
package typealias IssuedAPIKey = CreateAPIKeyRequest.Result

/// A user's API keys, as its provider lists them (never the keys themselves).
package typealias UserAPIKeys = ListAPIKeysRequest.Result

/// An API key of a user, named (the one `delete_api_key` deleted).
package typealias APIKeyName = DeleteAPIKeyRequest.Result
