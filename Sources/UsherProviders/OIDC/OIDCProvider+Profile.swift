import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The user's profile and custom data: from the ID token and userinfo at login, from userinfo at `refresh_profile`.
extension OIDCProvider: ProfileReading {
    /// Reads userinfo again with the session's access token (just refreshed by the registry). A provider without a
    /// userinfo endpoint has nothing new to say: the profile stays what the login's ID token gave.
    package func readProfile(_ session: ProviderSession) async throws -> (profile: UserClaims?, customData: UserClaims?)
    {
        guard session.providerData != Self.clientCredentialsData else { return (nil, nil) }
        let discovered: Discovered
        do {
            discovered = try await self.discovered()
        } catch {
            throw ProviderError.unavailable(Self.describe(error))
        }
        guard let endpoint = discovered.metadata.userinfoEndpoint else { return (nil, nil) }
        let claims = try await self.userinfo(
            endpoint,
            accessToken: session.tokens.accessToken,
            dpopKey: session.tokens.dpopKey
        )
        guard claims["sub"]?.stringValue == session.subject else {
            throw ProviderError.providerError(
                error: "invalid_userinfo",
                description: "userinfo is about another subject"
            )
        }
        return (
            UserClaims.profile(from: claims), self.customData(from: claims, accessToken: session.tokens.accessToken)
        )
    }

    /// The configured `custom_claims` from `claims` (the ID token's, completed by userinfo), completed by the access
    /// token's own claims when it is a JWT. The access token came straight from the token endpoint over the
    /// connection that authenticated the provider, so its claims are read without checking its signature (it is meant
    /// for resource servers, which do check it); they only fill in what the ID token and userinfo lack.
    func customData(from claims: [String: JSONValue], accessToken: String) -> UserClaims? {
        let names = self.configuration.customClaims
        guard !names.isEmpty else { return nil }
        var merged = claims
        if names.contains(where: { merged[$0] == nil }), let fromToken = Self.jwtPayload(accessToken) {
            merged.merge(fromToken) { fromClaims, _ in fromClaims }
        }
        return UserClaims.customData(from: merged, names: names)
    }

    /// The payload of a JWS compact token as a JSON object, unverified; nil when the token is not one (opaque).
    static func jwtPayload(_ token: String) -> [String: JSONValue]? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].utf8.count <= 64 * 1024 else { return nil }
        guard let bytes = Base64URL.decode(parts[1]) else { return nil }
        return try? JSONDecoder().decode([String: JSONValue].self, from: Data(bytes))
    }
}
