import UsherProtocol

/// Providers (their list, a configuration reload, published keys) and API keys.
extension SessionRegistry {
    package func providerInfos() -> [ProviderInfo] {
        self.providerOrder.compactMap { name in
            self.providers[name].map {
                ProviderInfo(
                    name: $0.name,
                    type: $0.type,
                    credentials: $0.credentialTypes,
                    default: $0.name == self.defaultProviderName
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

    private func apiKeyProvider(for userID: String?) throws -> (User, any APIKeyManaging) {
        try self.requireRunning()
        let user = try self.loggedIn(userID)
        guard let provider = self.providers[user.provider] as? any APIKeyManaging, !user.isAnonymous else {
            throw SessionError.unsupported("API keys are not available for user \(user.id)")
        }
        return (user, provider)
    }

    package func createAPIKey(name: String, userID: String?) async throws -> CreateAPIKeyRequest.Result {
        let (user, provider) = try self.apiKeyProvider(for: userID)
        let (key, createdAt) = try await provider.createAPIKey(subject: user.subject, name: name)
        return CreateAPIKeyRequest.Result(userID: user.id, name: name, key: key, createdAt: createdAt)
    }

    package func listAPIKeys(userID: String?) async throws -> ListAPIKeysRequest.Result {
        let (user, provider) = try self.apiKeyProvider(for: userID)
        return ListAPIKeysRequest.Result(
            userID: user.id,
            apiKeys: try await provider.listAPIKeys(subject: user.subject)
        )
    }

    package func deleteAPIKey(name: String, userID: String?) async throws -> DeleteAPIKeyRequest.Result {
        let (user, provider) = try self.apiKeyProvider(for: userID)
        guard try await provider.deleteAPIKey(subject: user.subject, name: name) else {
            throw SessionError.apiKeyNotFound(name)
        }
        return DeleteAPIKeyRequest.Result(userID: user.id, name: name)
    }
}
