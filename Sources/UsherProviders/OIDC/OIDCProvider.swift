import AsyncHTTPClient
import Foundation
import Logging
import Synchronization
import UsherCore
import UsherProtocol

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

    private let http: OIDCHTTP
    private let clock: any SessionClock
    private let background: BackgroundWork
    private let logger: Logger
    private let state = Mutex(State())

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
    /// How many device logins may be under way at once, and how long a finished one waits for `login_wait`.
    static let maximumDeviceLogins = 64
    static let deviceResultLifetimeMilliseconds: Int64 = 10 * 60_000

    /// The provider data of a client-credentials session: it is renewed with a new client credentials grant.
    static let clientCredentialsData = #"{"grant":"client_credentials"}"#

    private struct State {
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
    private struct PendingAuthorization {
        var nonce: String
        var codeChallenge: [UInt8]
        var redirectURI: String
        var expiresAt: Timestamp
    }

    /// A device login: polled by a background job until it completes, then kept until `login_wait` collects it.
    private struct DeviceLogin {
        var expiresAt: Timestamp
        var outcome: Result<Authentication, ProviderError>?
        var claimed = false
        var waiters: [UInt64: CheckedContinuation<Authentication, any Error>] = [:]
    }

    package init(
        name: String,
        configuration: OIDCProviderConfiguration,
        httpClient: HTTPClient,
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
    private func unsupportedReason(for kind: String, _ metadata: OIDCMetadata) -> String? {
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
    private func supports(grant: String, _ metadata: OIDCMetadata) -> Bool {
        self.configuration.grantTypes?.contains(grant) ?? metadata.supports(grant: grant)
    }

    private func requireSupport(of kind: String) async throws(ProviderError) -> Discovered {
        let discovered = try await self.discovered()
        if let reason = self.unsupportedReason(for: kind, discovered.metadata) {
            throw .unsupportedCredentials("provider \(self.name) \(reason)")
        }
        return discovered
    }

    // MARK: - Discovery

    /// Starts fetching discovery in the background, retrying with backoff until it succeeds. Idempotent.
    package func startDiscovery() {
        let start = self.state.withLock { state in
            defer { state.discoveryStarted = true }
            return !state.discoveryStarted
        }
        guard start else { return }
        self.background.submit { [self] in await self.discoverUntilDone() }
    }

    /// Stops retrying discovery: a reload removed or replaced this provider. Logins under way still finish.
    package func retire() {
        self.state.withLock { $0.retired = true }
    }

    private func discoverUntilDone() async {
        var failures = 0
        while !Task.isCancelled {
            if self.state.withLock({ $0.discovered != nil || $0.retired }) { return }
            do {
                _ = try await self.fetchDiscovery()
                return
            } catch {
                failures += 1
                let delay = Int64.random(in: TokenDeadlines.backoffMilliseconds(failures: failures))
                self.logger.warning(
                    "discovery failed; retrying",
                    metadata: [
                        "error": "\(Self.describe(error))", "retry_in_ms": "\(delay)", "attempt": "\(failures)",
                    ]
                )
                do {
                    try await self.clock.sleep(until: self.clock.now().adding(milliseconds: delay))
                } catch {
                    return
                }
            }
        }
    }

    /// Discovery's result: the cached one, or fetched now.
    func discovered() async throws(ProviderError) -> Discovered {
        if let discovered = self.state.withLock({ $0.discovered }) { return discovered }
        do {
            return try await self.fetchDiscovery()
        } catch .unavailable(let message) {
            throw .unavailable("provider \(self.name) is unreachable (discovery: \(message))")
        } catch {
            throw error.providerError
        }
    }

    private func fetchDiscovery() async throws(OIDCFailure) -> Discovered {
        let url = OIDCMetadata.discoveryURL(issuer: self.configuration.issuer)
        let response = try await self.http.get(url)
        guard response.status == 200 else {
            throw .invalid("discovery at \(url) answered HTTP \(response.status)")
        }
        let metadata = try OIDCMetadata.parse(
            response.jsonObject(what: "the discovery document"),
            expectedIssuer: self.configuration.issuer
        )
        var algorithms = Set(metadata.idTokenSigningAlgorithms).intersection(JWTVerifier.supportedAlgorithms)
        if algorithms.isEmpty { algorithms = ["RS256"] }
        let verifier = JWTVerifier(
            keys: .url(
                metadata.jwksURI,
                httpClient: self.http.client,
                timeout: self.http.timeout,
                logger: self.logger
            ),
            policy: JWTValidationPolicy(
                issuer: metadata.issuer,
                audiences: [self.configuration.clientID],
                algorithms: algorithms,
                requireIssuedAt: true
            ),
            clock: self.clock
        )
        let discovered = Discovered(metadata: metadata, verifier: verifier)
        let isFirst = self.state.withLock { state in
            guard state.discovered == nil else { return false }
            state.discovered = discovered
            return true
        }
        if isFirst {
            let credentials = Self.allCredentialTypes.filter { self.unsupportedReason(for: $0, metadata) == nil }
            self.logger.info(
                "discovery done",
                metadata: [
                    "issuer": "\(metadata.issuer)", "credentials": "\(credentials.joined(separator: ","))",
                    "revocation": "\(metadata.revocationEndpoint != nil)",
                ]
            )
        }
        return self.state.withLock { $0.discovered } ?? discovered
    }

    // MARK: - Login

    package func authenticate(credentials: [String: JSONValue]) async throws -> Authentication {
        let kind = credentials["type"]?.stringValue ?? ""
        func field(_ key: String) throws(ProviderError) -> String {
            guard case .string(let value)? = credentials[key], !value.isEmpty else {
                throw .invalidParams("\(kind) credentials need a non-empty string \(key)")
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
                "device logins start with login_begin {\"type\": \"device_code\"} and finish with login_wait"
            )
        default:
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) accepts \(Self.allCredentialTypes.joined(separator: ", ")) credentials, not "
                    + "\"\(OIDCHTTP.Response.printable(kind, limit: 40))\""
            )
        }
    }

    private var scope: String { self.configuration.scopes.joined(separator: " ") }

    /// `subject_token_type`: a full URI (RFC 8693 §3), or its last part (`jwt`, `id_token`, `access_token`,
    /// `refresh_token`).
    static func tokenTypeURI(_ type: String) throws(ProviderError) -> String {
        let prefix = "urn:ietf:params:oauth:token-type:"
        if type.hasPrefix("urn:") { return type }
        guard ["jwt", "id_token", "access_token", "refresh_token", "saml1", "saml2"].contains(type) else {
            throw .invalidParams(
                "subject_token_type must be a token type URI (RFC 8693) or one of jwt, id_token, access_token, "
                    + "refresh_token"
            )
        }
        return prefix + type
    }

    private func clientCredentials(_ discovered: Discovered) async throws(ProviderError) -> Authentication {
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
    private var serviceScope: String {
        self.configuration.scopes.filter { !["openid", "email", "profile", "offline_access"].contains($0) }
            .joined(separator: " ")
    }

    // MARK: Authorization code (RFC 6749 §4.1, PKCE RFC 7636, native apps RFC 8252)

    package func beginLogin(type: String, redirectURI: String?) async throws -> LoginBeginRequest.Result {
        switch type {
        case Kind.authorizationCode: return try await self.beginAuthorization(redirectURI: redirectURI)
        case Kind.deviceCode: return try await self.beginDeviceLogin()
        default:
            throw ProviderError.invalidParams("login_begin supports authorization_code and device_code")
        }
    }

    private func beginAuthorization(redirectURI requested: String?) async throws -> LoginBeginRequest.Result {
        let discovered = try await self.requireSupport(of: Kind.authorizationCode)
        guard let endpoint = discovered.metadata.authorizationEndpoint,
            let configured = LoopbackRedirect(self.configuration.redirectURI)
        else { throw ProviderError.unsupportedCredentials("provider \(self.name) has no authorization endpoint") }
        let redirect: LoopbackRedirect
        if let requested {
            guard let parsed = LoopbackRedirect(requested), configured.admits(parsed) else {
                throw ProviderError.invalidParams(
                    "params.redirect_uri must match the configured \(self.configuration.redirectURI) (any port when "
                        + "it is 0)"
                )
            }
            redirect = parsed
        } else if configured.port == 0 {
            guard let port = LoopbackPort.free(host: configured.host) else {
                throw ProviderError.unavailable("no free loopback port for the redirect")
            }
            redirect = LoopbackRedirect(host: configured.host, port: port, path: configured.path)
        } else {
            redirect = configured
        }
        let state = SecureRandom.token()
        let nonce = SecureRandom.token()
        let verifier = SecureRandom.token()
        let challenge = SecureRandom.sha256(verifier)
        let now = self.clock.now()
        let expiresAt = now.adding(milliseconds: Self.authorizationLifetimeMilliseconds)
        self.state.withLock { stateValue in
            stateValue.authorizations = stateValue.authorizations.filter { $0.value.expiresAt > now }
            if stateValue.authorizations.count >= Self.maximumPendingAuthorizations,
                let oldest = stateValue.authorizations.min(by: { $0.value.expiresAt < $1.value.expiresAt })?.key
            {
                stateValue.authorizations[oldest] = nil
            }
            stateValue.authorizations[state] = PendingAuthorization(
                nonce: nonce,
                codeChallenge: challenge,
                redirectURI: redirect.uri,
                expiresAt: expiresAt
            )
        }
        let query = [
            ("response_type", "code"), ("client_id", self.configuration.clientID), ("redirect_uri", redirect.uri),
            ("scope", self.scope), ("state", state), ("nonce", nonce),
            ("code_challenge", Base64URL.encode(challenge)), ("code_challenge_method", "S256"),
        ]
        .map { "\(FormEncoding.queryEscape($0.0))=\(FormEncoding.queryEscape($0.1))" }.joined(separator: "&")
        self.logger.debug("authorization code login started", metadata: ["redirect_uri": "\(redirect.uri)"])
        return LoginBeginRequest.Result(
            type: Kind.authorizationCode,
            provider: self.name,
            authorizeURL: endpoint + (endpoint.contains("?") ? "&" : "?") + query,
            state: state,
            codeVerifier: verifier,
            redirectURI: redirect.uri,
            expiresAt: expiresAt
        )
    }

    private func exchangeCode(
        code: String,
        verifier: String,
        redirectURI: String,
        state: String
    ) async throws(ProviderError) -> Authentication {
        let now = self.clock.now()
        // Single use: a state is consumed by the first attempt, right or wrong.
        guard let pending = self.state.withLock({ $0.authorizations.removeValue(forKey: state) }),
            pending.expiresAt > now
        else {
            throw .invalidCredentials(
                "the state does not belong to a login started with login_begin at \(self.name) (or it expired)"
            )
        }
        guard pending.redirectURI == redirectURI else {
            throw .invalidCredentials("the redirect_uri is not the one the login was started with")
        }
        guard SecureRandom.constantTimeEquals(SecureRandom.sha256(verifier), pending.codeChallenge) else {
            throw .invalidCredentials("the code_verifier does not match the login's code challenge")
        }
        let discovered = try await self.requireSupport(of: Kind.authorizationCode)
        let response = try await self.token(
            discovered.metadata,
            [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI),
                ("code_verifier", verifier),
            ]
        )
        return try await self.authentication(
            from: response,
            kind: Kind.authorizationCode,
            nonce: pending.nonce,
            discovered
        )
    }

    // MARK: Device flow (RFC 8628)

    private func beginDeviceLogin() async throws -> LoginBeginRequest.Result {
        let discovered = try await self.requireSupport(of: Kind.deviceCode)
        guard let endpoint = discovered.metadata.deviceAuthorizationEndpoint else {
            throw ProviderError.unsupportedCredentials("provider \(self.name) has no device flow")
        }
        guard self.state.withLock({ $0.deviceLogins.count }) < Self.maximumDeviceLogins else {
            throw ProviderError.unavailable("too many device logins are under way at \(self.name); try again later")
        }
        let (form, headers) = self.authenticatedForm([("scope", self.scope)])
        let object: [String: JSONValue]
        do throws(OIDCFailure) {
            let response = try await self.http.post(endpoint, form: form, headers: headers)
            guard response.status == 200 else { throw response.oauthError() }
            object = try response.jsonObject(what: "the device authorization response")
        } catch {
            throw error.providerError
        }
        guard case .string(let deviceCode)? = object["device_code"], case .string(let userCode)? = object["user_code"],
            let verificationURI = object["verification_uri"]?.stringValue ?? object["verification_url"]?.stringValue
        else {
            throw ProviderError.providerError(
                error: "invalid_response",
                description: "the device authorization response lacks device_code, user_code or verification_uri"
            )
        }
        let now = self.clock.now()
        let expiresIn = object["expires_in"].flatMap(Self.integer) ?? 600
        let interval = max(1, object["interval"].flatMap(Self.integer) ?? 5)
        let expiresAt = now.adding(milliseconds: max(1, expiresIn) * 1000)
        let loginID = "\(self.name).\(SecureRandom.token(byteCount: 16))"
        self.state.withLock { $0.deviceLogins[loginID] = DeviceLogin(expiresAt: expiresAt) }
        self.background.submit { [self] in
            await self.pollDeviceLogin(loginID, deviceCode: deviceCode, interval: interval, expiresAt: expiresAt)
        }
        self.logger.info("device login started", metadata: ["login.id": "\(loginID)"])
        return LoginBeginRequest.Result(
            type: Kind.deviceCode,
            provider: self.name,
            loginID: loginID,
            verificationURI: verificationURI,
            verificationURIComplete: object["verification_uri_complete"]?.stringValue
                ?? object["verification_url_complete"]?.stringValue,
            userCode: userCode,
            expiresAt: expiresAt
        )
    }

    private static func integer(_ value: JSONValue) -> Int64? {
        switch value {
        case .int(let value): value
        case .double(let value) where value.isFinite && abs(value) < 1e12: Int64(value)
        case .string(let text): Int64(text)
        default: nil
        }
    }

    /// Polls the token endpoint at the provider's interval (longer by 5 s after each `slow_down`) until the person
    /// approves or declines, or the code expires; then keeps the result for `login_wait` a while, and revokes a
    /// session nobody collected.
    private func pollDeviceLogin(_ loginID: String, deviceCode: String, interval: Int64, expiresAt: Timestamp) async {
        var interval = interval
        var outcome: Result<Authentication, ProviderError>
        while true {
            do {
                try await self.clock.sleep(until: self.clock.now().adding(milliseconds: interval * 1000))
            } catch {
                outcome = .failure(.unavailable("the daemon is stopping"))
                break
            }
            guard self.clock.now() < expiresAt else {
                outcome = .failure(.expiredToken("the device code expired before the login was approved"))
                break
            }
            guard let discovered = try? await self.discovered() else { continue }
            do {
                let response = try await self.tokenResponse(
                    discovered.metadata,
                    [("grant_type", OIDCMetadata.deviceCodeGrant), ("device_code", deviceCode)]
                )
                outcome = .success(
                    try await self.authentication(from: response, kind: Kind.deviceCode, nonce: nil, discovered)
                )
                break
            } catch let failure as OIDCFailure {
                switch failure {
                case .oauth(_, "authorization_pending"?, _):
                    continue
                case .oauth(_, "slow_down"?, _):
                    interval += 5
                    continue
                case .unavailable(let message):
                    // The provider may come back before the code expires: keep polling.
                    self.logger.notice(
                        "device login poll failed; retrying",
                        metadata: ["login.id": "\(loginID)", "error": "\(message)"]
                    )
                    continue
                default:
                    outcome = .failure(failure.providerError)
                }
                break
            } catch let error as ProviderError {
                if case .unavailable = error { continue }
                outcome = .failure(error)
                break
            } catch {
                outcome = .failure(.providerError(error: "internal", description: nil))
                break
            }
        }
        self.logger.info(
            "device login finished",
            metadata: ["login.id": "\(loginID)", "outcome": "\(Self.describe(outcome))"]
        )
        let (first, others) = self.state.withLock { state in
            guard var login = state.deviceLogins[loginID] else {
                return (
                    CheckedContinuation<Authentication, any Error>?.none,
                    [CheckedContinuation<Authentication, any Error>]()
                )
            }
            login.outcome = outcome
            // The first waiter collects the session; others learn that it was collected.
            let first = login.waiters.min(by: { $0.key < $1.key })
            if let first, case .success = outcome {
                login.waiters[first.key] = nil
                login.claimed = true
            }
            let others = Array(login.waiters.values)
            login.waiters = [:]
            state.deviceLogins[loginID] = login
            return (login.claimed ? first?.value : nil, others)
        }
        first?.resume(with: outcome.mapError { $0 as any Error })
        for other in others {
            switch outcome {
            case .success: other.resume(throwing: ProviderError.expiredToken("another login_wait collected the login"))
            case .failure(let error): other.resume(throwing: error)
            }
        }
        // Keep the result for a late login_wait, then forget it; revoke a session nobody collected.
        try? await self.clock.sleep(
            until: self.clock.now().adding(milliseconds: Self.deviceResultLifetimeMilliseconds)
        )
        let uncollected = self.state.withLock { state -> Authentication? in
            let login = state.deviceLogins.removeValue(forKey: loginID)
            guard let login, !login.claimed, case .success(let authentication)? = login.outcome else { return nil }
            return authentication
        }
        if let uncollected {
            _ = await self.revoke(
                ProviderSession(
                    userID: "",
                    subject: uncollected.subject,
                    tokens: uncollected.tokens,
                    providerData: uncollected.providerData
                )
            )
        }
    }

    package func hasLogin(_ loginID: String) -> Bool {
        self.state.withLock { $0.deviceLogins[loginID] != nil }
    }

    package func finishLogin(_ loginID: String) async throws -> Authentication {
        let id = self.state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<Authentication, any Error>) in
                let immediate: Result<Authentication, any Error>? = self.state.withLock { state in
                    guard var login = state.deviceLogins[loginID] else {
                        return .failure(ProviderError.expiredToken("the login is no longer under way"))
                    }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if let outcome = login.outcome {
                        guard !login.claimed else {
                            return .failure(ProviderError.expiredToken("the login was already collected"))
                        }
                        if case .success = outcome {
                            login.claimed = true
                            state.deviceLogins[loginID] = login
                        }
                        return outcome.mapError { $0 as any Error }
                    }
                    login.waiters[id] = continuation
                    state.deviceLogins[loginID] = login
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let continuation = self.state.withLock { $0.deviceLogins[loginID]?.waiters.removeValue(forKey: id) }
            continuation?.resume(throwing: CancellationError())
        }
    }

    // MARK: - Token endpoint

    /// The form fields and headers of a request authenticated as the configured client.
    private func authenticatedForm(_ fields: [(String, String)]) -> ([(String, String)], [(String, String)]) {
        let fields = fields.filter { !$0.1.isEmpty || $0.0 != "scope" }
        switch (self.configuration.clientAuthentication, self.configuration.clientSecret) {
        case (.clientSecretBasic, let secret?):
            let credentials = FormEncoding.escape(self.configuration.clientID) + ":" + FormEncoding.escape(secret)
            return (fields, [("Authorization", "Basic " + Data(credentials.utf8).base64EncodedString())])
        case (.clientSecretPost, let secret?):
            return (fields + [("client_id", self.configuration.clientID), ("client_secret", secret)], [])
        default:
            return (fields + [("client_id", self.configuration.clientID)], [])
        }
    }

    /// A token endpoint request whose failures keep their OAuth detail (device polling, refresh).
    private func tokenResponse(
        _ metadata: OIDCMetadata,
        _ fields: [(String, String)]
    ) async throws(OIDCFailure) -> OIDCTokenResponse {
        let (form, headers) = self.authenticatedForm(fields)
        let response = try await self.http.post(metadata.tokenEndpoint, form: form, headers: headers)
        guard response.status == 200 else { throw response.oauthError() }
        return try OIDCTokenResponse.parse(response.jsonObject(what: "the token response"))
    }

    /// A token endpoint request of a login: failures become the login's errors.
    private func token(
        _ metadata: OIDCMetadata,
        _ fields: [(String, String)]
    ) async throws(ProviderError) -> OIDCTokenResponse {
        do {
            return try await self.tokenResponse(metadata, fields)
        } catch {
            let grant = fields.first { $0.0 == "grant_type" }?.1 ?? "?"
            self.logger.notice("token request failed", metadata: ["grant": "\(grant)", "error": "\(error.summary)"])
            throw error.providerError
        }
    }

    // MARK: - Identity

    /// Who a token response is about: the verified ID token's claims, completed by userinfo when the provider has
    /// it. Without an ID token, userinfo alone must say who it is.
    private func authentication(
        from response: OIDCTokenResponse,
        kind: String,
        nonce: String?,
        _ discovered: Discovered
    ) async throws(ProviderError) -> Authentication {
        var claims: [String: JSONValue] = [:]
        if let idToken = response.idToken {
            claims = try await self.verifiedIDToken(idToken, nonce: nonce, discovered)
        }
        if let endpoint = discovered.metadata.userinfoEndpoint {
            var userinfo: [String: JSONValue]?
            do {
                userinfo = try await self.userinfo(endpoint, accessToken: response.accessToken)
            } catch {
                // With an ID token, userinfo only completes the profile; without one, it is who the user is.
                guard claims["sub"] != nil else { throw error }
                self.logger.debug("userinfo unavailable; using the ID token alone", metadata: ["error": "\(error)"])
            }
            if let userinfo {
                if let subject = claims["sub"], userinfo["sub"] != subject {
                    throw .providerError(
                        error: "invalid_userinfo",
                        description: "userinfo is about another subject than the ID token"
                    )
                }
                // The ID token's claims win; userinfo fills in what it lacks.
                claims.merge(userinfo) { fromToken, _ in fromToken }
            }
        }
        guard case .string(let subject)? = claims["sub"], !subject.isEmpty else {
            throw .providerError(
                error: "no_identity",
                description: "the provider returned neither an ID token nor userinfo with a sub (is openid in scopes?)"
            )
        }
        return Authentication(
            subject: subject,
            kind: kind,
            email: Self.verifiedEmail(claims),
            name: claims["name"]?.stringValue ?? claims["preferred_username"]?.stringValue,
            tokens: response.tokenSet(now: self.clock.now()),
            providerData: nil
        )
    }

    /// The `email` claim, only when `email_verified` is JSON `true` (OpenID Connect Core §5.1). `"true"`, `1`, a
    /// missing claim or anything else leaves the user without an email: an address nobody proved to own must not
    /// label the user.
    static func verifiedEmail(_ claims: [String: JSONValue]) -> String? {
        guard case .bool(true)? = claims["email_verified"] else { return nil }
        return claims["email"]?.stringValue
    }

    private func verifiedIDToken(
        _ token: String,
        nonce: String?,
        _ discovered: Discovered
    ) async throws(ProviderError) -> [String: JSONValue] {
        do throws(JWTError) {
            let claims = try await discovered.verifier.verify(token, nonce: nonce)
            guard case .string? = claims["sub"] else { throw JWTError.missingClaim("sub") }
            return claims
        } catch .keysUnavailable(let reason) {
            throw .unavailable("the provider's signing keys are unavailable: \(reason)")
        } catch {
            self.logger.notice("ID token rejected", metadata: ["reason": "\(error)"])
            throw .providerError(error: "invalid_id_token", description: "\(error)")
        }
    }

    private func userinfo(_ endpoint: String, accessToken: String) async throws(ProviderError) -> [String: JSONValue] {
        do throws(OIDCFailure) {
            let response = try await self.http.get(endpoint, bearerToken: accessToken)
            guard response.status == 200 else { throw response.oauthError() }
            return try response.jsonObject(what: "userinfo")
        } catch {
            throw error.providerError
        }
    }

    // MARK: - Refresh

    package func refresh(_ session: ProviderSession) async throws -> RefreshedSession {
        let discovered: Discovered
        do {
            discovered = try await self.discovered()
        } catch {
            throw ProviderError.unavailable(Self.describe(error))
        }
        if session.providerData == Self.clientCredentialsData {
            return try await self.renewClientCredentials(session, discovered)
        }
        guard let refreshToken = session.tokens.refreshToken else {
            throw ProviderError.sessionRevoked("the session has no refresh token")
        }
        let response: OIDCTokenResponse
        do {
            response = try await self.tokenResponse(
                discovered.metadata,
                [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
            )
        } catch {
            throw Self.refreshError(error)
        }
        if let idToken = response.idToken {
            // A refreshed ID token must be about the same person (OpenID Connect Core §12.2); no nonce this time.
            do {
                let claims = try await self.verifiedIDToken(idToken, nonce: nil, discovered)
                guard claims["sub"]?.stringValue == session.subject else {
                    throw ProviderError.unavailable("the refreshed ID token is about another subject")
                }
            } catch {
                throw ProviderError.unavailable(Self.describe(error))
            }
        }
        return RefreshedSession(tokens: response.tokenSet(now: self.clock.now()), providerData: nil)
    }

    /// How a failed refresh counts: `invalid_grant` and a bare 400 or 401 end the session; `invalid_client` and
    /// `unauthorized_client` are the daemon's configuration at fault (a wrong or rotated client secret, a client not
    /// allowed the grant), not the session's, so the user stays logged in and the registry waits long before trying
    /// again; everything else (network, 5xx, 429, other errors, garbage) is transient and retried, keeping the user
    /// logged in.
    static func refreshError(_ failure: OIDCFailure) -> ProviderError {
        switch failure {
        case .oauth(_, "invalid_grant"?, let description):
            return .sessionRevoked("the provider rejected the refresh token" + (description.map { ": \($0)" } ?? ""))
        case .oauth(_, let error?, _) where error == "invalid_client" || error == "unauthorized_client":
            return .misconfigured("the provider refused the client: \(failure.summary)")
        case .oauth(let status, nil, _) where status == 400 || status == 401:
            return .sessionRevoked("the provider rejected the refresh token (HTTP \(status))")
        default:
            return .unavailable(failure.summary)
        }
    }

    private func renewClientCredentials(
        _ session: ProviderSession,
        _ discovered: Discovered
    ) async throws -> RefreshedSession {
        do {
            var tokens = try await self.tokenResponse(
                discovered.metadata,
                [("grant_type", "client_credentials"), ("scope", self.serviceScope)]
            )
            .tokenSet(now: self.clock.now())
            tokens.refreshToken = tokens.refreshToken ?? session.tokens.refreshToken
            return RefreshedSession(tokens: tokens, providerData: Self.clientCredentialsData)
        } catch let failure {
            // A client no longer allowed this grant, or refused without a reason: the service account's session is
            // over. A refused client secret (invalid_client) is a configuration error like any refresh's.
            if case .oauth(_, let error, _) = failure, error == "unauthorized_client" || error == nil {
                throw ProviderError.sessionRevoked("the provider no longer accepts the client: \(failure.summary)")
            }
            throw Self.refreshError(failure)
        }
    }

    // MARK: - Revocation (RFC 7009)

    package func revoke(_ session: ProviderSession) async -> Bool {
        guard let discovered = try? await self.discovered() else {
            self.logger.notice(
                "revocation skipped: the provider is unreachable",
                metadata: ["user.id": "\(session.userID)"]
            )
            return false
        }
        guard let endpoint = discovered.metadata.revocationEndpoint else {
            self.logger.debug("the provider has no revocation endpoint", metadata: ["user.id": "\(session.userID)"])
            return false
        }
        let usesRefreshToken = session.providerData != Self.clientCredentialsData && session.tokens.refreshToken != nil
        let (token, hint) =
            usesRefreshToken
            ? (session.tokens.refreshToken ?? "", "refresh_token") : (session.tokens.accessToken, "access_token")
        let (form, headers) = self.authenticatedForm([("token", token), ("token_type_hint", hint)])
        do {
            let response = try await self.http.post(endpoint, form: form, headers: headers)
            let revoked = response.status == 200
            self.logger.info(
                revoked ? "tokens revoked" : "revocation refused",
                metadata: ["user.id": "\(session.userID)", "status": "\(response.status)", "token": "\(hint)"]
            )
            return revoked
        } catch {
            self.logger.notice(
                "revocation failed",
                metadata: ["user.id": "\(session.userID)", "error": "\(error.summary)"]
            )
            return false
        }
    }

    // MARK: - Descriptions

    static func describe(_ error: any Error) -> String {
        switch error {
        case let failure as OIDCFailure: failure.summary
        case let error as ProviderError:
            switch error {
            case .unavailable(let message), .sessionRevoked(let message), .invalidCredentials(let message),
                .unsupportedCredentials(let message), .invalidParams(let message), .accessDenied(let message),
                .expiredToken(let message), .misconfigured(let message):
                message
            case .providerError(let code, let description): code + (description.map { ": \($0)" } ?? "")
            case .accountExists, .registrationDisabled: "\(error)"
            }
        default: "\(error)"
        }
    }

    static func describe(_ outcome: Result<Authentication, ProviderError>) -> String {
        switch outcome {
        case .success: "approved"
        case .failure(let error): Self.describe(error)
        }
    }
}
