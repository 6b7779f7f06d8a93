import Logging
import Synchronization
import UsherCore
import UsherHTTP
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A provider of `type = "oidc"`: logs users in at an OpenID Connect provider (Keycloak, Authentik, Zitadel, Okta,
/// Entra ID, Google, django-oauth-toolkit, ...), refreshes their tokens with the `refresh_token` grant and revokes
/// them at logout (RFC 7009).
///
/// Endpoints come from discovery, fetched in the background at start and retried with backoff while the provider is
/// unreachable (and tried once more by any request that needs them meanwhile), so the daemon starts and serves
/// everything else whatever the provider's state. ID tokens are verified with `JWTVerifier` against the provider's
/// `jwks_uri`. The user's subject is the ID token's (or userinfo's) `sub`, so the same person always gets the same
/// user id.
///
/// Nothing secret is logged: not tokens, codes, PKCE verifiers, passwords or the client secret.
package final class OIDCProvider: IdentityProvider, InteractiveLoginProviding, Sendable {
    package let name: String
    package let type = "oidc"
    package let configuration: OIDCProviderConfiguration

    let http: OIDCHTTP
    let clock: any SessionClock
    let background: BackgroundWork
    let logger: Logger
    let state = Mutex(State())

    /// Every credential type, in the order `providers` lists them.
    package static let allCredentialTypes = [
        Kind.authorizationCode, Kind.deviceCode, Kind.password, Kind.clientCredentials, Kind.tokenExchange,
    ]

    enum Kind {
        static let authorizationCode = "authorization_code"
        static let deviceCode = "device_code"
        static let password = "password"
        static let clientCredentials = "client_credentials"
        static let tokenExchange = "token_exchange"
    }

    /// How long a started authorization code login may take, and how many may be under way at once.
    static let authorizationLifetimeMilliseconds: Int64 = 10 * 60_000
    static let maximumPendingAuthorizations = 256
    /// How many of those one uid may have: its own oldest makes way for its next (never another uid's).
    static let maximumPendingAuthorizationsPerUID = 32
    /// How many device logins may be under way at once, and how long a finished one waits for `login_wait`.
    static let maximumDeviceLogins = 64
    /// How many of those one uid may have (a uid with that many is refused until one ends).
    static let maximumDeviceLoginsPerUID = 8
    static let deviceResultLifetimeMilliseconds: Int64 = 10 * 60_000

    /// The provider data of a client-credentials session: it is renewed with a new client credentials grant.
    static let clientCredentialsData = #"{"grant":"client_credentials"}"#

    struct State {
        var discovered: Discovered?
        var discoveryStarted = false
        var retired = false
        var authorizations: [String: PendingAuthorization] = [:]
        var deviceLogins: [String: DeviceLogin] = [:]
        var nextWaiterID: UInt64 = 0
    }

    /// Discovery's result, with the verifier built from it.
    struct Discovered: Sendable {
        var metadata: OIDCMetadata
        var verifier: JWTVerifier
    }

    /// An authorization code login started by `login_begin`, waiting for its code.
    struct PendingAuthorization {
        /// The uid that began it: its quota is the one this login counts against.
        var owner: UInt32
        var nonce: String
        var codeChallenge: [UInt8]
        var redirectURI: String
        var expiresAt: Timestamp
    }

    /// A device login: polled by a background job until it completes, then kept until `login_wait` collects it.
    struct DeviceLogin {
        /// The uid that began it: only it (or root, or usherd's uid) may wait for it.
        var owner: UInt32
        var expiresAt: Timestamp
        var outcome: Result<Authentication, ProviderError>?
        var claimed = false
        var waiters: [UInt64: CheckedContinuation<Authentication, any Error>] = [:]
    }

    package init(
        name: String,
        configuration: OIDCProviderConfiguration,
        httpClient: HTTPTransport,
        clock: any SessionClock,
        background: BackgroundWork,
        logger: Logger
    ) {
        self.name = name
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "provider"] = "\(name)"
        self.logger = logger
        // The HTTP client logs only connection-pool chatter (debug, trace), which would drown the daemon's records;
        // failures are logged here instead. (Raising a copy's level would change the daemon's shared level.)
        self.http = OIDCHTTP(
            client: httpClient,
            timeout: .milliseconds(configuration.requestTimeoutMilliseconds),
            logger: Logger(label: "usher.oidc.http", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        self.clock = clock
        self.background = background
    }

    package var credentialTypes: [String] {
        guard let metadata = self.state.withLock({ $0.discovered?.metadata }) else {
            // Before discovery: every type, but a service account needs a client secret whatever the provider says.
            return Self.allCredentialTypes.filter {
                $0 != Kind.clientCredentials || self.configuration.clientSecret != nil
            }
        }
        return Self.allCredentialTypes.filter { self.unsupportedReason(for: $0, metadata) == nil }
    }

    /// Why `metadata` rules out a credential type, or nil when it does not.
    func unsupportedReason(for kind: String, _ metadata: OIDCMetadata) -> String? {
        switch kind {
        case Kind.authorizationCode:
            if metadata.authorizationEndpoint == nil { return "publishes no authorization_endpoint" }
            if let methods = metadata.codeChallengeMethods, !methods.contains("S256") {
                return "does not support PKCE with S256"
            }
            return self.supports(grant: "authorization_code", metadata)
                ? nil : "does not support the authorization code grant"
        case Kind.deviceCode:
            if metadata.deviceAuthorizationEndpoint == nil { return "publishes no device_authorization_endpoint" }
            return self.supports(grant: OIDCMetadata.deviceCodeGrant, metadata)
                ? nil : "does not support the device flow"
        case Kind.password:
            return self.supports(grant: "password", metadata) ? nil : "does not support the password grant"
        case Kind.clientCredentials:
            guard self.configuration.clientSecret != nil else {
                return "needs a confidential client (client_secret_file)"
            }
            return self.supports(grant: "client_credentials", metadata) ? nil : "does not support client credentials"
        case Kind.tokenExchange:
            return self.supports(grant: OIDCMetadata.tokenExchangeGrant, metadata)
                ? nil : "does not support token exchange"
        default:
            return "has no credential type \"\(OIDCHTTP.Response.printable(kind, limit: 40))\""
        }
    }

    /// Whether the provider takes `grant`: the configured `grant_types` when set (some providers list fewer grants in
    /// discovery than their token endpoint accepts), else discovery's `grant_types_supported`.
    func supports(grant: String, _ metadata: OIDCMetadata) -> Bool {
        self.configuration.grantTypes?.contains(grant) ?? metadata.supports(grant: grant)
    }

    func requireSupport(of kind: String) async throws(ProviderError) -> Discovered {
        let discovered = try await self.discovered()
        if let reason = self.unsupportedReason(for: kind, discovered.metadata) {
            throw .unsupportedCredentials("provider \(self.name) \(reason)")
        }
        return discovered
    }
}
