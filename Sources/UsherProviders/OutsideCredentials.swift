import Logging
import UsherCore
import UsherHTTP
import UsherProtocol

extension CredentialType {
    /// `{"type": "jwt", "token"}`: a JWT from the service configured in `[providers.NAME.jwt]`.
    package static let jwt = "jwt"
    /// `{"type": "id_token", "issuer", "token", "nonce"?}`: an OpenID Connect ID token from a named issuer.
    package static let idToken = "id_token"
    /// `{"type": "function", "payload": {...}}`: whatever the configured authentication function accepts.
    package static let function = "function"
}

/// `[providers.NAME.jwt]` and `[providers.NAME.id_token.ISSUER]`: tokens that another service signs.
package struct OutsideTokenConfiguration: Sendable, Hashable {
    /// Where the verification keys are.
    package enum KeySet: Sendable, Hashable {
        /// `jwks_file`: a JWK set file, read on first use and again when a token names an unknown `kid`.
        case file(String)
        /// `jwks_url`: fetched on first use, cached, fetched again for an unknown `kid` (at most every 30 s).
        case url(String)
    }

    /// `issuer`: the only accepted `iss`.
    package var issuer: String
    /// `audience`: `aud` must name one of these.
    package var audiences: [String]
    package var keys: KeySet
    /// `algorithms`.
    package var algorithms: [String] = ["RS256", "ES256"]
    /// `subject_claim` (jwt only): the claim that identifies the user.
    package var subjectClaim = "sub"
    /// `email_claim` (jwt only): the claim that holds the user's email, if any.
    package var emailClaim = "email"
    /// `leeway`: clock skew allowed for `exp`, `nbf` and `iat`.
    package var leewaySeconds: Int64 = 60
    /// `custom_claims`: the token's claims kept as the user's `custom_data`.
    package var customClaims: [String] = []

    package init(issuer: String, audiences: [String], keys: KeySet) {
        self.issuer = issuer
        self.audiences = audiences
        self.keys = keys
    }
}

/// A local provider's verifiers and function for outside credentials, built from its configuration.
struct OutsideCredentials: Sendable {
    /// One configured token issuer.
    struct TokenIssuer: Sendable {
        var configuration: OutsideTokenConfiguration
        var verifier: JWTVerifier
    }

    /// How long fetching a JWK set may take.
    static let keyFetchTimeout: Duration = .seconds(5)

    var jwt: TokenIssuer?
    var idTokenIssuers: [String: TokenIssuer] = [:]
    var function: FunctionHook?
    /// One configured access-token issuer, with the HTTP client its checks use (bounded by its `request_timeout`).
    struct AccessTokenIssuer: Sendable {
        var configuration: AccessTokenIssuerConfiguration
        var http: OIDCHTTP
    }

    var accessTokenIssuers: [String: AccessTokenIssuer] = [:]

    init(
        providerName: String,
        configuration: LocalProviderConfiguration,
        httpClient: HTTPTransport,
        clock: any SessionClock,
        logger: Logger
    ) {
        func issuer(_ configuration: OutsideTokenConfiguration) -> TokenIssuer {
            let keys: JWKSSource =
                switch configuration.keys {
                case .file(let path): .file(path: path)
                case .url(let url):
                    .url(url, httpClient: httpClient, timeout: Self.keyFetchTimeout, logger: logger)
                }
            let policy = JWTValidationPolicy(
                issuer: configuration.issuer,
                audiences: configuration.audiences,
                algorithms: Set(configuration.algorithms),
                leewaySeconds: configuration.leewaySeconds
            )
            return TokenIssuer(
                configuration: configuration,
                verifier: JWTVerifier(keys: keys, policy: policy, clock: clock)
            )
        }
        self.jwt = configuration.jwt.map(issuer)
        self.idTokenIssuers = configuration.idTokenIssuers.mapValues(issuer)
        self.function = configuration.function.map {
            FunctionHook(providerName: providerName, configuration: $0, logger: logger)
        }
        self.accessTokenIssuers = configuration.accessTokenIssuers.mapValues { issuer in
            AccessTokenIssuer(
                configuration: issuer,
                http: OIDCHTTP(
                    client: httpClient,
                    timeout: .milliseconds(issuer.requestTimeoutMilliseconds),
                    logger: logger
                )
            )
        }
    }

    /// The credential types these enable, in the order `providers` lists them.
    var credentialTypes: [String] {
        var types: [String] = []
        if self.jwt != nil { types.append(CredentialType.jwt) }
        if !self.idTokenIssuers.isEmpty { types.append(CredentialType.idToken) }
        if self.function != nil { types.append(CredentialType.function) }
        if !self.accessTokenIssuers.isEmpty { types.append(CredentialType.accessToken) }
        return types
    }

    /// Whether `subject` belongs to a user of outside credentials (who has no local account, hence no API keys).
    static func isOutsideSubject(_ subject: String) -> Bool {
        [CredentialType.jwt, CredentialType.idToken, CredentialType.function, CredentialType.accessToken].contains {
            subject.hasPrefix($0 + ":")
        }
    }
}

extension LocalProvider {
    /// `{"type": "jwt", "token"}`. The user's subject is `jwt:<issuer>:<subject claim>`, so it can never be a local
    /// account's, and stays the same for every token about the same user.
    func authenticateJWT(_ credentials: [String: JSONValue]) async throws -> Authentication {
        guard let issuer = self.outside.jwt else {
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) does not accept jwt credentials (no [providers.\(self.name).jwt] section)"
            )
        }
        guard let token = credentials["token"]?.stringValue else {
            throw ProviderError.invalidParams(parameter: "credentials", "jwt credentials need a string token")
        }
        let claims = try await Self.verify(token, with: issuer, nonce: nil, what: "JWT")
        let subject = try Self.subject(claims, claim: issuer.configuration.subjectClaim, what: "JWT")
        return try await self.openSession(
            subject: "\(CredentialType.jwt):\(issuer.configuration.issuer):\(subject)",
            kind: CredentialType.jwt,
            email: Self.email(claims, claim: issuer.configuration.emailClaim, requireVerified: false),
            name: claims["name"]?.stringValue,
            profile: UserClaims.profile(from: claims),
            customData: UserClaims.customData(from: claims, names: issuer.configuration.customClaims)
        )
    }

    /// `{"type": "id_token", "issuer", "token", "nonce"?}`. The subject is `id_token:<iss>:<sub>`. The email is
    /// taken only when the token says it is verified.
    func authenticateIDToken(_ credentials: [String: JSONValue]) async throws -> Authentication {
        guard !self.outside.idTokenIssuers.isEmpty else {
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) does not accept id_token credentials "
                    + "(no [providers.\(self.name).id_token.ISSUER] section)"
            )
        }
        guard let name = credentials["issuer"]?.stringValue else {
            throw ProviderError.invalidParams(
                parameter: "credentials",
                "id_token credentials need a string issuer (a configured issuer's name)"
            )
        }
        guard let issuer = self.outside.idTokenIssuers[name] else {
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) has no ID-token issuer named \(JWTError.quoted(name)) (configured: "
                    + self.outside.idTokenIssuers.keys.sorted().joined(separator: ", ") + ")"
            )
        }
        guard let token = credentials["token"]?.stringValue else {
            throw ProviderError.invalidParams(parameter: "credentials", "id_token credentials need a string token")
        }
        let nonce: String?
        switch credentials["nonce"] {
        case nil, .null?: nonce = nil
        case .string(let value)?: nonce = value
        default:
            throw ProviderError.invalidParams(
                parameter: "credentials",
                "the nonce of id_token credentials must be a string"
            )
        }
        let claims = try await Self.verify(token, with: issuer, nonce: nonce, what: "ID token")
        let subject = try Self.subject(claims, claim: "sub", what: "ID token")
        return try await self.openSession(
            subject: "\(CredentialType.idToken):\(issuer.configuration.issuer):\(subject)",
            kind: CredentialType.idToken,
            email: Self.email(claims, claim: "email", requireVerified: true),
            name: claims["name"]?.stringValue,
            profile: UserClaims.profile(from: claims),
            customData: UserClaims.customData(from: claims, names: issuer.configuration.customClaims)
        )
    }

    /// `{"type": "function", "payload": {...}}`: the configured command decides. The subject is
    /// `function:<subject it answered>`.
    func authenticateFunction(_ credentials: [String: JSONValue]) async throws -> Authentication {
        guard let function = self.outside.function else {
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) does not accept function credentials "
                    + "(no [providers.\(self.name).function] section)"
            )
        }
        guard case .object(let payload)? = credentials["payload"] else {
            throw ProviderError.invalidParams(parameter: "credentials", "function credentials need an object payload")
        }
        let verdict = try await function.decide(payload: payload)
        return try await self.openSession(
            subject: "\(CredentialType.function):\(verdict.subject)",
            kind: CredentialType.function,
            email: verdict.email,
            name: verdict.name
        )
    }

    /// The email claim of a verified token, if the user is known to own it: only when `email_verified` is JSON
    /// `true` (a string `"true"`, `1` or anything else is not). An ID token must say so (OpenID Connect Core §5.1:
    /// without the claim, nobody vouched for the address); a `jwt` from the configured service may leave the claim
    /// out (the service vouches for what it puts in `email_claim`), but when it carries one, it must be `true`.
    static func email(_ claims: [String: JSONValue], claim: String, requireVerified: Bool) -> String? {
        switch claims["email_verified"] {
        case .bool(true)?: break
        case nil where !requireVerified: break
        default: return nil
        }
        return claims[claim]?.stringValue
    }

    /// Verifies a token, mapping every refusal to `invalidCredentials` and missing keys to `unavailable`.
    private static func verify(
        _ token: String,
        with issuer: OutsideCredentials.TokenIssuer,
        nonce: String?,
        what: String
    ) async throws(ProviderError) -> [String: JSONValue] {
        do {
            return try await issuer.verifier.verify(token, nonce: nonce)
        } catch .keysUnavailable(let reason) {
            throw .unavailable("cannot check the \(what): its signing keys are unavailable (\(reason))")
        } catch {
            throw .invalidCredentials("\(what) rejected: \(error)")
        }
    }

    /// The subject claim as a string (a number is taken as its decimal digits), 1 to 1024 bytes.
    private static func subject(
        _ claims: [String: JSONValue],
        claim: String,
        what: String
    ) throws(ProviderError) -> String {
        let subject: String
        switch claims[claim] {
        case .string(let value)?: subject = value
        case .int(let value)?: subject = String(value)
        case nil: throw .invalidCredentials("\(what) rejected: \(JWTError.missingClaim(claim))")
        default: throw .invalidCredentials("\(what) rejected: the \(claim) claim is not a string")
        }
        guard !subject.isEmpty, subject.utf8.count <= 1024 else {
            throw .invalidCredentials("\(what) rejected: the \(claim) claim must be 1 to 1024 bytes long")
        }
        return subject
    }
}
