import UsherProtocol

// What the registry hands out: access tokens, DPoP proofs, API keys. Each `description` leaves the secret out.

/// An access token handed out for a user: the session's own, or a narrowed one (`audience`, `scopes`).
package struct IssuedToken: Sendable, Hashable, CustomStringConvertible {
    package var userID: String
    package var accessToken: String
    package var tokenType: String
    package var expiresAt: Timestamp
    /// Whole seconds left at the time it was handed out.
    package var expiresIn: Int64
    /// A narrowed token's audience and scopes (nil for the session's own token).
    package var audience: String?
    package var scopes: [String]?

    package init(
        userID: String,
        accessToken: String,
        tokenType: String,
        expiresAt: Timestamp,
        expiresIn: Int64,
        audience: String? = nil,
        scopes: [String]? = nil
    ) {
        self.userID = userID
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresAt = expiresAt
        self.expiresIn = expiresIn
        self.audience = audience
        self.scopes = scopes
    }

    /// Never shows the token.
    package var description: String { "access token for \(self.userID), expires \(self.expiresAt)" }
}

/// A user's tokens after `refresh`: when the access token now expires.
package struct RefreshedTokens: Sendable, Hashable {
    package var userID: String
    package var accessTokenExpiresAt: Timestamp

    package init(userID: String, accessTokenExpiresAt: Timestamp) {
        self.userID = userID
        self.accessTokenExpiresAt = accessTokenExpiresAt
    }
}

/// A DPoP proof for one request, bound to the access token that expires at `accessTokenExpiresAt`.
package struct IssuedProof: Sendable, Hashable, CustomStringConvertible {
    package var userID: String
    package var proof: String
    package var accessTokenExpiresAt: Timestamp

    package init(userID: String, proof: String, accessTokenExpiresAt: Timestamp) {
        self.userID = userID
        self.proof = proof
        self.accessTokenExpiresAt = accessTokenExpiresAt
    }

    /// Never shows the proof.
    package var description: String { "DPoP proof for \(self.userID)" }
}

/// A new API key: the key itself is handed out here only, never again.
package struct IssuedAPIKey: Sendable, Hashable, CustomStringConvertible {
    package var userID: String
    package var name: String
    package var key: String
    package var createdAt: Timestamp

    package init(userID: String, name: String, key: String, createdAt: Timestamp) {
        self.userID = userID
        self.name = name
        self.key = key
        self.createdAt = createdAt
    }

    /// Never shows the key.
    package var description: String { "API key \(self.name) for \(self.userID)" }
}

/// A user's API keys, as its provider lists them (never the keys themselves).
package struct UserAPIKeys: Sendable, Hashable {
    package var userID: String
    package var apiKeys: [APIKeyInfo]

    package init(userID: String, apiKeys: [APIKeyInfo]) {
        self.userID = userID
        self.apiKeys = apiKeys
    }
}

/// An API key of a user, named (the one `delete_api_key` deleted).
package struct APIKeyName: Sendable, Hashable {
    package var userID: String
    package var name: String

    package init(userID: String, name: String) {
        self.userID = userID
        self.name = name
    }
}
