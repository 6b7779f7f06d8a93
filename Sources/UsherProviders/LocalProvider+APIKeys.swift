import UsherCore
import UsherProtocol

/// API keys of a local provider's email/password accounts: made here (only their SHA-256 is stored), listed and
/// deleted by name; logging in with one is `authenticate` with an `api_key` credential.
extension LocalProvider {
    package func createAPIKey(subject: String, name: String) async throws -> (key: String, createdAt: Timestamp) {
        // An API key logs in as the local account that made it; users of outside credentials have no account.
        guard !OutsideCredentials.isOutsideSubject(subject) else {
            throw ProviderError.unsupportedCredentials("API keys belong to email/password accounts")
        }
        guard (1...64).contains(name.utf8.count),
            name.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || [UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ".")].contains(byte)
            })
        else {
            throw ProviderError.invalidParams(
                parameter: "name",
                "params.name must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', '-'"
            )
        }
        let key = "usher_" + SecureRandom.token(byteCount: 32)
        let createdAt = self.clock.now()
        guard
            try await self.database.createAPIKey(
                provider: self.name,
                subject: subject,
                name: name,
                keyHash: SecureRandom.sha256(key),
                createdAt: createdAt
            )
        else { throw ProviderError.invalidParams(parameter: "name", "an API key named \"\(name)\" exists already") }
        return (key, createdAt)
    }

    package func listAPIKeys(subject: String) async throws -> [APIKeyInfo] {
        try await self.database.apiKeys(provider: self.name, subject: subject)
    }

    package func deleteAPIKey(subject: String, name: String) async throws -> Bool {
        try await self.database.deleteAPIKey(provider: self.name, subject: subject, name: name)
    }
}
