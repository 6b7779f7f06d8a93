import Logging
import Synchronization
import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Logins without a browser (credentials the daemon is given) and the entry points of interactive logins.
extension OIDCProvider {
    // MARK: - Login

    package func authenticate(credentials: [String: JSONValue]) async throws -> Authentication {
        let kind = credentials["type"]?.stringValue ?? ""
        func field(_ key: String) throws(ProviderError) -> String {
            guard case .string(let value)? = credentials[key], !value.isEmpty else {
                throw .invalidParams(parameter: "credentials", "\(kind) credentials need a non-empty string \(key)")
            }
            return value
        }
        switch kind {
        case Kind.authorizationCode:
            return try await self.exchangeCode(
                code: try field("code"),
                verifier: try field("code_verifier"),
                redirectURI: try field("redirect_uri"),
                state: try field("state")
            )
        case Kind.password:
            let discovered = try await self.requireSupport(of: Kind.password)
            let response = try await self.token(
                discovered.metadata,
                [
                    ("grant_type", "password"), ("username", try field("username")),
                    ("password", try field("password")), ("scope", self.scope),
                ]
            )
            return try await self.authentication(from: response, kind: kind, nonce: nil, discovered)
        case Kind.clientCredentials:
            return try await self.clientCredentials(try await self.requireSupport(of: Kind.clientCredentials))
        case Kind.tokenExchange:
            let discovered = try await self.requireSupport(of: Kind.tokenExchange)
            let subjectTokenType = try Self.tokenTypeURI(try field("subject_token_type"))
            let response = try await self.token(
                discovered.metadata,
                [
                    ("grant_type", OIDCMetadata.tokenExchangeGrant), ("subject_token", try field("subject_token")),
                    ("subject_token_type", subjectTokenType), ("scope", self.scope),
                ]
            )
            return try await self.authentication(from: response, kind: kind, nonce: nil, discovered)
        case Kind.deviceCode:
            throw ProviderError.invalidParams(
                parameter: "credentials",
                "device logins start with login_begin {\"type\": \"device_code\"} and finish with login_wait"
            )
        default:
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) accepts \(Self.allCredentialTypes.joined(separator: ", ")) credentials, not "
                    + "\"\(OIDCHTTP.Response.printable(kind, limit: 40))\""
            )
        }
    }

    var scope: String { self.configuration.scopes.joined(separator: " ") }

    /// `subject_token_type`: a full URI (RFC 8693 §3), or its last part (`jwt`, `id_token`, `access_token`,
    /// `refresh_token`).
    static func tokenTypeURI(_ type: String) throws(ProviderError) -> String {
        let prefix = "urn:ietf:params:oauth:token-type:"
        if type.hasPrefix("urn:") { return type }
        guard ["jwt", "id_token", "access_token", "refresh_token", "saml1", "saml2"].contains(type) else {
            throw .invalidParams(
                parameter: "credentials",
                "subject_token_type must be a token type URI (RFC 8693) or one of jwt, id_token, access_token, "
                    + "refresh_token"
            )
        }
        return prefix + type
    }

    func clientCredentials(_ discovered: Discovered) async throws(ProviderError) -> Authentication {
        let response = try await self.token(
            discovered.metadata,
            [("grant_type", "client_credentials"), ("scope", self.serviceScope)]
        )
        var tokens = response.tokenSet(now: self.clock.now())
        // A service account has no refresh token: it is renewed with a new grant. A random stand-in lets the
        // registry schedule that renewal and tell sessions apart; it is never sent anywhere.
        if tokens.refreshToken == nil { tokens.refreshToken = "cc." + SecureRandom.token() }
        return Authentication(
            subject: "client:\(self.configuration.clientID)",
            kind: Kind.clientCredentials,
            email: nil,
            name: self.configuration.clientID,
            tokens: tokens,
            providerData: Self.clientCredentialsData
        )
    }

    /// Client credentials act for no user: `openid` and the profile scopes make no sense for them.
    var serviceScope: String {
        self.configuration.scopes.filter { !["openid", "email", "profile", "offline_access"].contains($0) }
            .joined(separator: " ")
    }
}
