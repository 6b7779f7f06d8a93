import UsherProtocol

/// Providers (their list, a configuration reload, published keys) and API keys.
extension SessionRegistry {
    /// A configured identity provider as `providers` lists it.
    package struct ProviderSummary: Sendable, Hashable {
        package var name: String
        package var type: String
        package var credentialTypes: [String]
        /// Whether requests that name no provider use this one.
        package var isDefault: Bool
    }

    /// The configured providers, in configuration order.
    package func providerSummaries() -> [ProviderSummary] {
        self.providerOrder.compactMap { name in
            self.providers[name].map {
                ProviderSummary(
                    name: $0.name,
                    type: $0.type,
                    credentialTypes: $0.credentialTypes,
                    isDefault: $0.name == self.defaultProviderName
                )
            }
        }
    }

    /// Replaces the configured providers (configuration reload). Users of a provider that disappeared stay on the
    /// device; their refreshes fail until it returns. Refreshes a provider refused for the daemon's configuration are
    /// tried again at once.
    package func reconfigure(
        providers: [any IdentityProvider],
        defaultProvider: String,
        configuration: RegistryConfiguration
    ) {
        self.replaceProviders(providers, defaultProvider: defaultProvider, configuration: configuration)
        self.retryMisconfiguredRefreshes()
    }

    func provider(named name: String?) throws(SessionError) -> any IdentityProvider {
        let name = name ?? self.defaultProviderName
        guard let provider = self.providers[name] else { throw .providerNotFound(name) }
        return provider
    }

    package func publicKeys() -> [JWK] {
        self.providerOrder.compactMap { self.providers[$0] as? any KeyPublishing }.flatMap(\.publicKeys)
    }

    // MARK: - API keys

    /// The user a key request is about and its provider, when the user is the peer's (a key logs in as the user for as
    /// long as it lives: only the owner plants or sees one).
    private func apiKeyProvider(
        for userID: String?,
        _ ownership: Ownership,
        to action: String
    ) throws -> (User, any APIKeyManaging) {
        try self.requireRunning()
        let user = try self.loggedIn(userID)
        try ownership.require(user, to: action)
        guard let provider = self.providers[user.provider] as? any APIKeyManaging, !user.isAnonymous else {
            throw SessionError.unsupported("API keys are not available for user \(user.id)")
        }
        return (user, provider)
    }

    package func createAPIKey(name: String, userID: String?, ownership: Ownership) async throws -> IssuedAPIKey {
        let (user, provider) = try self.apiKeyProvider(for: userID, ownership, to: "create API keys for")
        let (key, createdAt) = try await provider.createAPIKey(subject: user.subject, name: name)
        return IssuedAPIKey(userID: user.id, name: name, key: key, createdAt: createdAt)
    }

    package func listAPIKeys(userID: String?, ownership: Ownership) async throws -> UserAPIKeys {
        let (user, provider) = try self.apiKeyProvider(for: userID, ownership, to: "list the API keys of")
        return UserAPIKeys(
            userID: user.id,
            apiKeys: try await provider.listAPIKeys(subject: user.subject)
        )
    }

    package func deleteAPIKey(name: String, userID: String?, ownership: Ownership) async throws -> APIKeyName {
        let (user, provider) = try self.apiKeyProvider(for: userID, ownership, to: "delete API keys of")
        guard try await provider.deleteAPIKey(subject: user.subject, name: name) else {
            throw SessionError.apiKeyNotFound(name)
        }
        return APIKeyName(userID: user.id, name: name)
    }
}
