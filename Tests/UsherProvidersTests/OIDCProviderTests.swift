import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// The OpenID Connect provider against a scripted provider: the error shapes a real server never produces, and every
/// check the provider makes. (The flows against a real server are in `OIDCIntegrationTests`.)
@Suite(.timeLimit(.minutes(2)))
struct OIDCProviderTests {
    static let password: [String: JSONValue] = ["type": "password", "username": "ada", "password": "hunter2"]

    static func userinfo(_ fields: [String: JSONValue] = [:]) -> ScriptedHTTPServer.Reply {
        var body: [String: JSONValue] = [
            "sub": "user-1", "email": "ada@example.com", "email_verified": true, "preferred_username": "ada",
        ]
        body.merge(fields) { _, new in new }
        return .json(200, TestJWT.json(body))
    }

    static func session(
        refreshToken: String? = "refresh-1",
        providerData: String? = nil
    ) -> ProviderSession {
        let now = Timestamp.now()
        return ProviderSession(
            userID: "u_1",
            subject: "user-1",
            tokens: TokenSet(
                accessToken: "access-1",
                issuedAt: now,
                expiresAt: now.adding(milliseconds: 60_000),
                refreshToken: refreshToken,
                refreshExpiresAt: nil
            ),
            providerData: providerData
        )
    }

    /// The `ProviderError` an operation threw (nil when it threw something else or nothing).
    static func providerError(_ operation: () async throws -> some Any) async -> ProviderError? {
        do {
            _ = try await operation()
            return nil
        } catch {
            return error as? ProviderError
        }
    }

    // MARK: - Password grant, client authentication, profile, expiry

    @Test func passwordLoginAuthenticatesTheClientAndReadsTheProfileFromUserinfo() async throws {
        try await OIDCFixture.with { fixture in
            fixture.server.handle("/token") { _ in
                OIDCFixture.tokens(extra: ["refresh_expires_in": 600, "scope": "openid email profile"])
            }
            fixture.server.handle("/userinfo") { request in
                request.headers["authorization"] == "Bearer access-1" ? Self.userinfo() : .json(401, "{}")
            }
            let before = Timestamp.now().millisecondsSinceEpoch
            let authentication = try await fixture.provider().authenticate(credentials: Self.password)
            let elapsed = Timestamp.now().millisecondsSinceEpoch - before
            #expect(authentication.subject == "user-1")
            #expect(authentication.kind == "password")
            #expect(authentication.email == "ada@example.com")
            // Without a name claim, preferred_username names the user.
            #expect(authentication.name == "ada")
            #expect(authentication.tokens.accessToken == "access-1")
            #expect(authentication.tokens.refreshToken == "refresh-1")
            // Counted from when the answer came: between the request and now.
            let lifetime = authentication.tokens.expiresAt.millisecondsSinceEpoch - before
            #expect((120_000...(120_000 + elapsed)).contains(lifetime))
            let refreshLifetime = try #require(authentication.tokens.refreshExpiresAt).millisecondsSinceEpoch - before
            #expect((600_000...(600_000 + elapsed)).contains(refreshLifetime))

            let request = try #require(fixture.server.requests(to: "/token").first)
            #expect(request.method == "POST")
            #expect(request.form["grant_type"] == "password")
            #expect(request.form["username"] == "ada")
            #expect(request.form["password"] == "hunter2")
            #expect(request.form["scope"] == "openid email profile")
            // client_secret_basic: the form-encoded id and secret (RFC 6749 §2.3.1), nothing in the body.
            let basic = "Basic " + Data("usher:s3cret%2F%2B".utf8).base64EncodedString()
            #expect(request.headers["authorization"] == basic)
            #expect(request.form["client_secret"] == nil)
            #expect(request.headers["content-type"] == "application/x-www-form-urlencoded")
        }
    }

    @Test func clientSecretPostAndPublicClientsSendTheirIDInTheForm() async throws {
        try await OIDCFixture.with { fixture in
            fixture.server.handle("/token") { _ in OIDCFixture.tokens() }
            fixture.server.handle("/userinfo") { _ in Self.userinfo() }
            _ = try await fixture.provider(authentication: .clientSecretPost).authenticate(credentials: Self.password)
            _ = try await fixture.provider(clientSecret: nil).authenticate(credentials: Self.password)
            let requests = fixture.server.requests(to: "/token")
            #expect(requests.count == 2)
            #expect(requests[0].form["client_id"] == "usher")
            #expect(requests[0].form["client_secret"] == "s3cret/+")
            #expect(requests[0].headers["authorization"] == nil)
            #expect(requests[1].form["client_id"] == "usher")
            #expect(requests[1].form["client_secret"] == nil)
            #expect(requests[1].headers["authorization"] == nil)
        }
    }

    @Test func expiryComesFromExpiresInTheJWTExpAndRefreshExpiresIn() throws {
        let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        func tokens(_ object: [String: JSONValue]) throws -> TokenSet {
            try OIDCTokenResponse.parse(object).tokenSet(now: now)
        }
        let plain = try tokens(["access_token": "a", "expires_in": 60, "refresh_token": "r"])
        #expect(plain.expiresAt == now.adding(milliseconds: 60_000))
        #expect(plain.issuedAt == now)
        #expect(plain.refreshExpiresAt == nil)
        // Some providers send numbers as strings.
        #expect(try tokens(["access_token": "a", "expires_in": "90"]).expiresAt == now.adding(milliseconds: 90_000))
        // A JWT access token that expires earlier than expires_in says wins; a later one does not.
        let earlier = "e30." + TestJWT.base64URL(Array(#"{"exp":1800000030}"#.utf8)) + ".c2ln"
        #expect(
            try tokens(["access_token": .string(earlier), "expires_in": 60]).expiresAt
                == now.adding(milliseconds: 30_000)
        )
        let later = "e30." + TestJWT.base64URL(Array(#"{"exp":1800003600}"#.utf8)) + ".c2ln"
        #expect(
            try tokens(["access_token": .string(later), "expires_in": 60]).expiresAt
                == now.adding(milliseconds: 60_000)
        )
        // Only a JWT exp: that is the expiry.
        #expect(try tokens(["access_token": .string(earlier)]).expiresAt == now.adding(milliseconds: 30_000))
        // Neither: the documented default of five minutes.
        #expect(try tokens(["access_token": "opaque"]).expiresAt == now.adding(milliseconds: 300_000))
        // refresh_expires_in: the refresh token's expiry; 0 means none (Keycloak's offline tokens).
        #expect(
            try tokens(["access_token": "a", "refresh_expires_in": 1800]).refreshExpiresAt
                == now.adding(milliseconds: 1_800_000)
        )
        #expect(try tokens(["access_token": "a", "refresh_expires_in": 0]).refreshExpiresAt == nil)
    }

    // MARK: - Error shapes

    static let loginFailures: [(String, ScriptedHTTPServer.Reply, ProviderError)] = [
        (
            "invalid_grant", .json(400, #"{"error":"invalid_grant","error_description":"Invalid credentials given."}"#),
            .invalidCredentials("the provider rejected the grant: Invalid credentials given.")
        ),
        (
            "other OAuth error", .json(400, #"{"error":"invalid_scope","error_description":"no such scope"}"#),
            .providerError(error: "invalid_scope", description: "no such scope")
        ),
        (
            "OAuth error without description", .json(401, #"{"error":"invalid_client"}"#),
            .providerError(error: "invalid_client", description: nil)
        ),
        (
            "bare 401", .status(401, contentType: "text/html", body: "<h1>no</h1>"),
            .providerError(error: "http_401", description: nil)
        ),
        (
            "access_denied", .json(403, #"{"error":"access_denied"}"#),
            .accessDenied("the login was declined at the provider")
        ),
        ("500", .status(500, contentType: "text/html", body: "oops"), .unavailable("127.0.0.1 answered HTTP 500")),
        ("503 with JSON", .json(503, #"{"error":"temporarily_unavailable"}"#), .unavailable("answered HTTP 503")),
        ("429", .json(429, #"{"error":"slow_down"}"#), .unavailable("answered HTTP 429")),
        (
            "malformed JSON", .json(200, #"{"access_token": "a", "#),
            .providerError(error: "invalid_response", description: "the token response is not a JSON object (HTTP 200)")
        ),
        (
            "a JSON array", .json(200, "[1, 2]"),
            .providerError(error: "invalid_response", description: "the token response is not a JSON object (HTTP 200)")
        ),
        (
            "no access_token", .json(200, #"{"token_type":"Bearer"}"#),
            .providerError(error: "invalid_response", description: "the token response has no access_token")
        ),
        (
            "not a bearer token", .json(200, #"{"access_token":"a","token_type":"mac"}"#),
            .providerError(error: "invalid_response", description: "the token type \"mac\" is not Bearer")
        ),
        ("garbage instead of HTTP", .garbage, .unavailable("cannot reach")),
    ]

    @Test(arguments: 0..<Self.loginFailures.count)
    func loginFailuresBecomeClearErrors(_ index: Int) async throws {
        let (name, reply, expected) = Self.loginFailures[index]
        try await OIDCFixture.with { fixture in
            fixture.server.handle("/token") { _ in reply }
            let error = await Self.providerError {
                try await fixture.provider().authenticate(credentials: Self.password)
            }
            let actual = try #require(error, "\(name): no ProviderError")
            switch (actual, expected) {
            case (.unavailable(let message), .unavailable(let fragment)):
                #expect(message.contains(fragment.replacingOccurrences(of: "127.0.0.1", with: "")), "\(name)")
            default:
                #expect(actual == expected, "\(name)")
            }
            // Nothing secret in the error or the log.
            for secret in ["hunter2", "s3cret"] {
                #expect(!"\(actual)".contains(secret))
                #expect(!fixture.logs.text.contains(secret))
            }
        }
    }

    @Test func aProviderThatStallsTimesOut() async throws {
        try await OIDCFixture.with { fixture in
            fixture.server.handle("/token") { _ in .stall }
            let error = await Self.providerError {
                try await fixture.provider(timeoutMilliseconds: 500).authenticate(credentials: Self.password)
            }
            guard case .unavailable(let message)? = error else {
                Issue.record("expected unavailable, got \(String(describing: error))")
                return
            }
            // Without the timeout it would wait for as long as the server stalls (for ever): the answer coming back
            // at all, and saying why, is the behaviour; the test's time limit is the hang guard.
            #expect(message.contains("timed out"))
        }
    }

    @Test func unreachableProvidersAndTLSFailuresAreUnavailable() async throws {
        try await OIDCFixture.with { fixture in
            // Nothing listens there: the connection is refused.
            let closed = try RefusingPort()
            let refused = await Self.providerError {
                try await fixture.provider(issuer: closed.base).authenticate(credentials: Self.password)
            }
            guard case .unavailable(let message)? = refused else {
                Issue.record("expected unavailable, got \(String(describing: refused))")
                return
            }
            #expect(message.contains("unreachable"))

            // An https issuer whose server speaks plain HTTP: the TLS handshake fails.
            let plain = try ScriptedHTTPServer()
            defer { plain.stop() }
            plain.replyImmediately(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}".utf8))
            let tls = await Self.providerError {
                try await fixture.provider(issuer: "https://127.0.0.1:\(plain.port)").authenticate(
                    credentials: Self.password
                )
            }
            guard case .unavailable? = tls else {
                Issue.record("expected unavailable, got \(String(describing: tls))")
                return
            }
        }
    }

    // MARK: - Discovery

    @Test func discoveryIsCheckedAndNotCachedWhenItFails() async throws {
        try await OIDCFixture.with { fixture in
            fixture.server.handle("/token") { _ in OIDCFixture.tokens() }
            fixture.server.handle("/userinfo") { _ in Self.userinfo() }
            let provider = fixture.provider()
            func loginError() async -> ProviderError? {
                await Self.providerError { try await provider.authenticate(credentials: Self.password) }
            }
            fixture.serveDiscovery(["issuer": "https://evil.example.com"])
            guard case .providerError("invalid_response", let description?)? = await loginError() else {
                Issue.record("an issuer mismatch must be a provider error")
                return
            }
            #expect(description.contains("is not the configured issuer"))

            fixture.serveDiscovery(["token_endpoint": "http://id.example.com/token"])
            guard case .providerError(_, let plainHTTP?)? = await loginError() else {
                Issue.record("a plain http endpoint off loopback must be refused")
                return
            }
            #expect(plainHTTP.contains("https"))

            fixture.server.handle("/.well-known/openid-configuration") { _ in .json(503, "{}") }
            guard case .unavailable? = await loginError() else {
                Issue.record("a 503 at discovery is transient")
                return
            }
            fixture.server.handle("/.well-known/openid-configuration") { _ in .json(200, "<html>") }
            guard case .providerError("invalid_response", _)? = await loginError() else {
                Issue.record("a discovery document that is not JSON is a provider error")
                return
            }
            // Once the document is right, the next request discovers again and succeeds.
            fixture.serveDiscovery()
            #expect(await loginError() == nil)
        }
    }

    @Test func discoveryIsRetriedInTheBackgroundWithBackoff() async throws {
        try await OIDCFixture.with { fixture in
            let attempts = Locked(0)
            let document = fixture.discoveryDocument(["device_authorization_endpoint": .null])
            fixture.server.handle("/.well-known/openid-configuration") { _ in
                let attempt = attempts.withLock { count in
                    count += 1
                    return count
                }
                return attempt < 3 ? .json(503, "{}") : .json(200, document)
            }
            let provider = fixture.provider()
            // Before discovery every credential type is offered (a service account only with a client secret).
            #expect(provider.credentialTypes == OIDCProvider.allCredentialTypes)
            #expect(!fixture.provider(clientSecret: nil).credentialTypes.contains("client_credentials"))
            let started = ContinuousClock.now
            provider.startDiscovery()
            provider.startDiscovery()
            try await eventually(timeout: .seconds(60)) { !provider.credentialTypes.contains("device_code") }
            // Two failures: waits of about 1 s and 2 s (less up to 10 % jitter) before the third attempt.
            #expect(ContinuousClock.now - started >= .milliseconds(2700))
            #expect(attempts.withLock { $0 } == 3)
            #expect(fixture.logs.text.contains("discovery failed; retrying"))
            #expect(
                provider.credentialTypes == ["authorization_code", "password", "client_credentials", "token_exchange"]
            )
        }
    }

    // MARK: - Authorization code with PKCE

    @Test func authorizationCodeLoginChecksStatePKCEAndNonce() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider(clientSecret: nil)
            let issued = Locked<[String: String]>([:])
            fixture.server.handle("/token") { request in
                guard let nonce = issued.withLock({ $0[request.form["code"] ?? ""] }),
                    let idToken = try? fixture.idToken(nonce: nonce)
                else { return .json(400, #"{"error":"invalid_grant"}"#) }
                return OIDCFixture.tokens(idToken: idToken)
            }
            fixture.server.handle("/userinfo") { _ in Self.userinfo(["name": "Someone Else", "locale": "en"]) }

            /// Starts a login and plays the provider's part: returns the credentials the client would send.
            func begin(redirectURI: String? = nil) async throws -> (LoginBeginRequest.Result, [String: JSONValue]) {
                let begun = try await provider.beginLogin(type: "authorization_code", redirectURI: redirectURI)
                let authorizeURL = try #require(begun.authorizeURL)
                let url = try #require(URLComponents(string: authorizeURL))
                let query = Dictionary(uniqueKeysWithValues: (url.queryItems ?? []).map { ($0.name, $0.value ?? "") })
                #expect(url.path == "/authorize")
                #expect(query["response_type"] == "code")
                #expect(query["client_id"] == "usher")
                #expect(query["redirect_uri"] == begun.redirectURI)
                #expect(query["scope"] == "openid email profile")
                #expect(query["state"] == begun.state)
                #expect(query["code_challenge_method"] == "S256")
                let verifier = try #require(begun.codeVerifier)
                #expect((43...128).contains(verifier.count))
                #expect(query["code_challenge"] == Base64URL.encode(SecureRandom.sha256(verifier)))
                let code = "code-\(UUID().uuidString)"
                issued.withLock { $0[code] = query["nonce"] }
                return (
                    begun,
                    [
                        "type": "authorization_code", "code": .string(code), "code_verifier": .string(verifier),
                        "redirect_uri": .string(try #require(begun.redirectURI)),
                        "state": .string(try #require(begun.state)),
                    ]
                )
            }

            let (begun, credentials) = try await begin()
            #expect(begun.type == "authorization_code")
            #expect(begun.loginID == nil)
            // Port 0 in the configuration: the daemon picks a free loopback port.
            let redirectURI = try #require(begun.redirectURI)
            let redirect = try #require(URLComponents(string: redirectURI))
            #expect(redirect.host == "127.0.0.1")
            #expect(redirect.path == "/callback")
            #expect((redirect.port ?? 0) > 0)

            let authentication = try await provider.authenticate(credentials: credentials)
            #expect(authentication.subject == "user-1")
            #expect(authentication.kind == "authorization_code")
            // The ID token's claims win over userinfo's.
            #expect(authentication.name == "Ada Lovelace")
            #expect(authentication.email == "ada@example.com")
            let exchange = try #require(fixture.server.requests(to: "/token").last)
            #expect(exchange.form["grant_type"] == "authorization_code")
            #expect(exchange.form["code_verifier"] == credentials["code_verifier"]?.stringValue)
            #expect(exchange.form["redirect_uri"] == credentials["redirect_uri"]?.stringValue)
            #expect(exchange.form["client_id"] == "usher")

            // A state is good for one attempt.
            guard
                case .invalidCredentials? = await Self.providerError({
                    try await provider.authenticate(credentials: credentials)
                })
            else {
                Issue.record("a used state must be refused")
                return
            }
            // The verifier must match the challenge, the redirect the one the login began with; neither reaches the
            // provider.
            let tokenRequests = fixture.server.requests(to: "/token").count
            var wrongVerifier = try await begin().1
            wrongVerifier["code_verifier"] = .string(String(repeating: "x", count: 43))
            var wrongRedirect = try await begin().1
            wrongRedirect["redirect_uri"] = "http://127.0.0.1:9/callback"
            var unknownState = try await begin().1
            unknownState["state"] = "made-up"
            for bad in [wrongVerifier, wrongRedirect, unknownState] {
                guard
                    case .invalidCredentials? = await Self.providerError({
                        try await provider.authenticate(credentials: bad)
                    })
                else {
                    Issue.record("credentials \(bad.keys.sorted()) must be refused")
                    continue
                }
            }
            #expect(fixture.server.requests(to: "/token").count == tokenRequests)
            var missing = try await begin().1
            missing["state"] = nil
            guard
                case .invalidParams? = await Self.providerError({
                    try await provider.authenticate(credentials: missing)
                })
            else {
                Issue.record("authorization_code credentials without state must be refused")
                return
            }

            // A client that listens first passes its redirect: same host and path, any port when configured 0.
            let explicit = try await provider.beginLogin(
                type: "authorization_code",
                redirectURI: "http://127.0.0.1:5555/callback"
            )
            #expect(explicit.redirectURI == "http://127.0.0.1:5555/callback")
            for bad in [
                "http://127.0.0.1:5555/other", "http://localhost:5555/callback", "https://127.0.0.1:5555/callback",
            ] {
                guard
                    case .invalidParams? = await Self.providerError({
                        try await provider.beginLogin(type: "authorization_code", redirectURI: bad)
                    })
                else {
                    Issue.record("\(bad) must be refused")
                    continue
                }
            }
        }
    }

    static let idTokenProblems: [(String, [String: JSONValue], Bool, String)] = [
        // name, claim changes, sign with another key, expected fragment of the description
        ("wrong nonce", ["nonce": "someone-elses"], false, "nonce"),
        ("no nonce", ["nonce": .null], false, "nonce"),
        ("other key", [:], true, "unknown key"),
        ("wrong audience", ["aud": "another-client"], false, "audience"),
        ("wrong issuer", ["iss": "https://evil.example.com"], false, "issuer"),
        ("expired", ["exp": 1_000_000_000, "iat": 999_999_000], false, "expired"),
        ("no iat", ["iat": .null], false, "iat"),
        ("no sub", ["sub": .null], false, "sub"),
    ]

    @Test(arguments: 0..<Self.idTokenProblems.count)
    func idTokensAreVerified(_ index: Int) async throws {
        let (name, changes, otherKey, fragment) = Self.idTokenProblems[index]
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider(clientSecret: nil)
            let begun = try await provider.beginLogin(type: "authorization_code", redirectURI: nil)
            let query = URLComponents(string: try #require(begun.authorizeURL))?.queryItems ?? []
            let nonce = try #require(query.first { $0.name == "nonce" }?.value)
            let token: String
            if otherKey {
                let stranger = TestIssuerKey.p256(kid: "stranger")
                token = try stranger.sign(["iss": .string(fixture.issuer), "sub": "user-1", "aud": "usher"])
            } else {
                var claims = changes
                if claims["nonce"] == nil { claims["nonce"] = .string(nonce) }
                token = try fixture.idToken(nonce: nil, claims)
            }
            fixture.server.handle("/token") { _ in OIDCFixture.tokens(idToken: token) }
            let error = await Self.providerError {
                try await provider.authenticate(
                    credentials: [
                        "type": "authorization_code", "code": "c",
                        "code_verifier": .string(try #require(begun.codeVerifier)),
                        "redirect_uri": .string(try #require(begun.redirectURI)),
                        "state": .string(try #require(begun.state)),
                    ]
                )
            }
            guard case .providerError("invalid_id_token", let description?)? = error else {
                Issue.record("\(name): expected invalid_id_token, got \(String(describing: error))")
                return
            }
            #expect(description.contains(fragment), "\(name): \(description)")
            #expect(!description.contains(token))
        }
    }

    @Test func unavailableSigningKeysAndAnotherSubjectInUserinfoAreCaught() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider()
            fixture.server.handle("/token") { _ in OIDCFixture.tokens(idToken: try? fixture.idToken()) }
            fixture.server.handle("/jwks") { _ in .json(503, "{}") }
            // A password login whose answer carries an ID token is verified too (no nonce there).
            guard
                case .unavailable(let message)? = await Self.providerError({
                    try await provider.authenticate(credentials: Self.password)
                })
            else {
                Issue.record("unavailable keys are a transient failure")
                return
            }
            #expect(message.contains("signing keys"))

            fixture.serveDiscovery()
            // With an ID token, a userinfo endpoint that fails only leaves the profile to the ID token.
            fixture.server.handle("/userinfo") { _ in .json(500, "{}") }
            let fromIDToken = try await provider.authenticate(credentials: Self.password)
            #expect(fromIDToken.name == "Ada Lovelace")
            fixture.server.handle("/userinfo") { _ in Self.userinfo(["sub": "user-2"]) }
            guard
                case .providerError("invalid_userinfo", _)? = await Self.providerError({
                    try await provider.authenticate(credentials: Self.password)
                })
            else {
                Issue.record("userinfo about another subject must be refused")
                return
            }
            // Without an ID token, userinfo must say who it is.
            fixture.server.handle("/token") { _ in OIDCFixture.tokens() }
            fixture.server.handle("/userinfo") { _ in .json(401, "{}") }
            guard
                case .providerError(let code, _)? = await Self.providerError({
                    try await provider.authenticate(credentials: Self.password)
                })
            else {
                Issue.record("a login nobody can be identified for must fail")
                return
            }
            #expect(code == "http_401")
            fixture.server.handle("/userinfo") { _ in .json(200, #"{"email":"a@example.com"}"#) }
            guard
                case .providerError("no_identity", _)? = await Self.providerError({
                    try await provider.authenticate(credentials: Self.password)
                })
            else {
                Issue.record("userinfo without sub identifies nobody")
                return
            }
        }
    }

    // MARK: - Refresh

    @Test func refreshRotatesAndKeepsTheSubject() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider()
            fixture.server.handle("/token") { request in
                request.form["refresh_token"] == "refresh-1"
                    ? OIDCFixture.tokens(access: "access-2", refresh: "refresh-2", expiresIn: 30)
                    : .json(400, #"{"error":"invalid_grant"}"#)
            }
            let refreshed = try await provider.refresh(Self.session())
            #expect(refreshed.tokens.accessToken == "access-2")
            #expect(refreshed.tokens.refreshToken == "refresh-2")
            let request = try #require(fixture.server.requests(to: "/token").last)
            #expect(request.form["grant_type"] == "refresh_token")
            #expect(request.headers["authorization"]?.hasPrefix("Basic ") == true)

            // A provider that does not rotate: no refresh token in the answer (the registry keeps the old one).
            fixture.server.handle("/token") { _ in OIDCFixture.tokens(access: "access-3", refresh: nil) }
            #expect(try await provider.refresh(Self.session()).tokens.refreshToken == nil)

            // A refreshed ID token must be about the same person.
            fixture.server.handle("/token") { _ in
                OIDCFixture.tokens(idToken: try? fixture.idToken(subject: "someone-else"))
            }
            guard
                case .unavailable(let message)? = await Self.providerError({
                    try await provider.refresh(Self.session())
                })
            else {
                Issue.record("another subject on refresh must fail")
                return
            }
            #expect(message.contains("another subject"))
            fixture.server.handle("/token") { _ in OIDCFixture.tokens(idToken: try? fixture.idToken()) }
            #expect(try await provider.refresh(Self.session()).tokens.accessToken == "access-1")
            #expect(!fixture.logs.text.contains("refresh-1"))
            #expect(!fixture.logs.text.contains("access-"))
        }
    }

    /// How a refresh failure counts.
    enum RefreshFailure {
        /// The session is over (`session_revoked`).
        case revoked
        /// The daemon's client configuration is at fault: the user stays logged in, retried after a long wait.
        case misconfigured
        /// Retried with the usual backoff.
        case transient
    }

    static let refreshFailures: [(String, ScriptedHTTPServer.Reply, RefreshFailure)] = [
        ("invalid_grant", .json(400, #"{"error":"invalid_grant","error_description":"revoked"}"#), .revoked),
        ("bare 400", .status(400, contentType: "text/plain", body: "Bad Request"), .revoked),
        ("bare 401", .status(401, contentType: "text/plain", body: "Unauthorized"), .revoked),
        ("invalid_client", .json(401, #"{"error":"invalid_client"}"#), .misconfigured),
        (
            "invalid_client 400", .json(400, #"{"error":"invalid_client","error_description":"bad secret"}"#),
            .misconfigured
        ),
        ("unauthorized_client", .json(400, #"{"error":"unauthorized_client"}"#), .misconfigured),
        ("invalid_request", .json(400, #"{"error":"invalid_request"}"#), .transient),
        ("500", .status(500, contentType: "text/plain", body: "boom"), .transient),
        ("503", .json(503, "{}"), .transient),
        ("429", .json(429, "{}"), .transient),
        ("malformed 200", .json(200, "not json"), .transient),
        ("garbage", .garbage, .transient),
        ("stall", .stall, .transient),
    ]

    @Test(arguments: 0..<Self.refreshFailures.count)
    func refreshFailuresAreTransientMisconfiguredOrPermanent(_ index: Int) async throws {
        let (name, reply, expected) = Self.refreshFailures[index]
        try await OIDCFixture.with { fixture in
            fixture.server.handle("/token") { _ in reply }
            let error = await Self.providerError {
                try await fixture.provider(timeoutMilliseconds: 500).refresh(Self.session())
            }
            switch (error, expected) {
            case (.sessionRevoked?, .revoked), (.unavailable?, .transient): break
            case (.misconfigured(let message)?, .misconfigured):
                #expect(message.contains("client"), "\(name): \(message)")
            default: Issue.record("\(name): expected \(expected), got \(String(describing: error))")
            }
        }
    }

    @Test func refreshWhileTheProviderIsUnreachableIsTransient() async throws {
        try await OIDCFixture.with { fixture in
            let closed = try RefusingPort()
            let error = await Self.providerError {
                try await fixture.provider(issuer: closed.base).refresh(Self.session())
            }
            guard case .unavailable? = error else {
                Issue.record("expected unavailable, got \(String(describing: error))")
                return
            }
        }
    }

    // MARK: - Client credentials

    @Test func clientCredentialsLogInTheServiceAccountAndRenewWithANewGrant() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider(scopes: ["openid", "profile", "api.read"])
            fixture.server.handle("/token") { request in
                request.form["grant_type"] == "client_credentials"
                    ? OIDCFixture.tokens(access: "service-\(UUID().uuidString)", refresh: nil)
                    : .json(400, #"{"error":"unsupported_grant_type"}"#)
            }
            let authentication = try await provider.authenticate(credentials: ["type": "client_credentials"])
            #expect(authentication.subject == "client:usher")
            #expect(authentication.kind == "client_credentials")
            #expect(authentication.name == "usher")
            #expect(authentication.email == nil)
            let standIn = try #require(authentication.tokens.refreshToken)
            #expect(standIn.hasPrefix("cc."))
            let request = try #require(fixture.server.requests(to: "/token").last)
            // The user scopes make no sense for a service account.
            #expect(request.form["scope"] == "api.read")
            #expect(fixture.server.requests(to: "/userinfo").isEmpty)

            let session = ProviderSession(
                userID: "u_s",
                subject: authentication.subject,
                tokens: authentication.tokens,
                providerData: authentication.providerData
            )
            let renewed = try await provider.refresh(session)
            #expect(renewed.tokens.accessToken != authentication.tokens.accessToken)
            #expect(renewed.tokens.refreshToken == standIn)
            let renewal = try #require(fixture.server.requests(to: "/token").last)
            #expect(renewal.form["grant_type"] == "client_credentials")
            #expect(renewal.form["refresh_token"] == nil)

            // A refused secret is a configuration error, as for any refresh: the service account stays logged in.
            fixture.server.handle("/token") { _ in .json(401, #"{"error":"invalid_client"}"#) }
            guard case .misconfigured? = await Self.providerError({ try await provider.refresh(session) }) else {
                Issue.record("a refused client secret is a configuration error")
                return
            }
            // A client no longer allowed the grant ends the service account's session.
            fixture.server.handle("/token") { _ in .json(400, #"{"error":"unauthorized_client"}"#) }
            guard case .sessionRevoked? = await Self.providerError({ try await provider.refresh(session) }) else {
                Issue.record("a client no longer allowed the grant ends the service account's session")
                return
            }
            // Client credentials need a confidential client.
            guard
                case .unsupportedCredentials? = await Self.providerError({
                    try await fixture.provider(clientSecret: nil).authenticate(credentials: [
                        "type": "client_credentials"
                    ])
                })
            else {
                Issue.record("a public client has no service account")
                return
            }
        }
    }

    // MARK: - Token exchange

    @Test func tokenExchangeSendsTheSubjectToken() async throws {
        try await OIDCFixture.with { fixture in
            fixture.server.handle("/token") { request in
                request.form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange"
                    ? OIDCFixture.tokens(
                        idToken: try? fixture.idToken(subject: "exchanged"),
                        extra: ["issued_token_type": "urn:ietf:params:oauth:token-type:access_token"]
                    ) : .json(400, #"{"error":"unsupported_grant_type"}"#)
            }
            fixture.server.handle("/userinfo") { _ in Self.userinfo(["sub": "exchanged"]) }
            let authentication = try await fixture.provider().authenticate(
                credentials: ["type": "token_exchange", "subject_token": "outside-jwt", "subject_token_type": "jwt"]
            )
            #expect(authentication.subject == "exchanged")
            #expect(authentication.kind == "token_exchange")
            let request = try #require(fixture.server.requests(to: "/token").last)
            #expect(request.form["subject_token"] == "outside-jwt")
            #expect(request.form["subject_token_type"] == "urn:ietf:params:oauth:token-type:jwt")
            guard
                case .invalidParams? = await Self.providerError({
                    try await fixture.provider().authenticate(
                        credentials: ["type": "token_exchange", "subject_token": "x", "subject_token_type": "photo"]
                    )
                })
            else {
                Issue.record("an unknown token type must be refused")
                return
            }
            // A provider whose discovery lists its grants and not this one is not asked.
            fixture.serveDiscovery(["grant_types_supported": ["authorization_code", "refresh_token"]])
            guard
                case .unsupportedCredentials? = await Self.providerError({
                    try await fixture.provider().authenticate(
                        credentials: ["type": "token_exchange", "subject_token": "x", "subject_token_type": "jwt"]
                    )
                })
            else {
                Issue.record("an unsupported grant must be refused before any request")
                return
            }
        }
    }

    // MARK: - Revocation

    @Test func revocationUsesTheRefreshTokenAndReportsTheOutcome() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider()
            fixture.server.handle("/revoke") { _ in .json(200, "") }
            #expect(await provider.revoke(Self.session()))
            let request = try #require(fixture.server.requests(to: "/revoke").last)
            #expect(request.form["token"] == "refresh-1")
            #expect(request.form["token_type_hint"] == "refresh_token")
            #expect(request.headers["authorization"]?.hasPrefix("Basic ") == true)
            // A service account's stand-in is never sent: its access token is revoked instead.
            #expect(
                await provider.revoke(
                    Self.session(refreshToken: "cc.x", providerData: OIDCProvider.clientCredentialsData)
                )
            )
            let service = try #require(fixture.server.requests(to: "/revoke").last)
            #expect(service.form["token"] == "access-1")
            #expect(service.form["token_type_hint"] == "access_token")

            fixture.server.handle("/revoke") { _ in .json(503, "{}") }
            #expect(await provider.revoke(Self.session()) == false)
            fixture.server.handle("/revoke") { _ in .stall }
            #expect(await fixture.provider(timeoutMilliseconds: 300).revoke(Self.session()) == false)
            #expect(!fixture.logs.text.contains("refresh-1"))
        }
        try await OIDCFixture.with { fixture in
            fixture.serveDiscovery(["revocation_endpoint": .null])
            #expect(await fixture.provider().revoke(Self.session()) == false)
        }
    }

    // MARK: - Device flow

    @Test func deviceFlowPollsAtTheIntervalAndSlowsDown() async throws {
        let clock = ManualClock(now: Timestamp.now())
        try await OIDCFixture.with(clock: clock) { fixture in
            let polls = Locked(0)
            fixture.server.handle("/device") { request in
                request.form["client_id"] == "usher" && request.form["scope"] == "openid email profile"
                    ? .json(
                        200,
                        #"{"device_code":"dev-1","user_code":"ABCD-EFGH","verification_uri":"https://id.example.com/device","verification_uri_complete":"https://id.example.com/device?code=ABCD-EFGH","expires_in":600,"interval":2}"#
                    ) : .json(400, #"{"error":"invalid_request"}"#)
            }
            fixture.server.handle("/token") { request in
                guard request.form["device_code"] == "dev-1",
                    request.form["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code"
                else { return .json(400, #"{"error":"invalid_grant"}"#) }
                let poll = polls.withLock { count in
                    count += 1
                    return count
                }
                switch poll {
                case 1: return .json(400, #"{"error":"authorization_pending"}"#)
                case 2: return .json(400, #"{"error":"slow_down"}"#)
                case 3: return .json(503, "{}")
                default: return OIDCFixture.tokens(access: "device-access")
                }
            }
            fixture.server.handle("/userinfo") { _ in Self.userinfo() }
            let provider = fixture.provider(clientSecret: nil)
            let begun = try await provider.beginLogin(type: "device_code", redirectURI: nil)
            let loginID = try #require(begun.loginID)
            #expect(loginID.hasPrefix("corp."))
            #expect(begun.status == "pending")
            #expect(begun.userCode == "ABCD-EFGH")
            #expect(begun.verificationURI == "https://id.example.com/device")
            #expect(begun.verificationURIComplete == "https://id.example.com/device?code=ABCD-EFGH")
            #expect(begun.expiresAt == clock.now().adding(milliseconds: 600_000))
            #expect(provider.hasLogin(loginID))
            #expect(!provider.hasLogin("corp.unknown"))

            try await withThrowingTaskGroup(of: Authentication.self) { group in
                group.addTask { try await provider.finishLogin(loginID) }
                /// Moves time on and returns the number of polls once the poller sleeps again. (The clock wakes a
                /// sleeper whose time came at once, so a poll that is due is under way when `advance` returns.)
                func pollsAfter(advancing seconds: Int64) async throws -> Int {
                    try await eventually { clock.sleeperCount == 1 }
                    clock.advance(bySeconds: seconds)
                    try await eventually { clock.sleeperCount == 1 }
                    return polls.withLock { $0 }
                }
                #expect(try await pollsAfter(advancing: 1) == 0)
                #expect(try await pollsAfter(advancing: 1) == 1)  // at the interval: pending
                #expect(try await pollsAfter(advancing: 2) == 2)  // slow_down: the interval grows by 5 s
                #expect(try await pollsAfter(advancing: 6) == 2)
                #expect(try await pollsAfter(advancing: 1) == 3)  // 7 s later; 503 is transient: keep polling
                #expect(try await pollsAfter(advancing: 7) == 4)
                let authentication = try #require(try await group.next())
                #expect(authentication.subject == "user-1")
                #expect(authentication.kind == "device_code")
                #expect(authentication.tokens.accessToken == "device-access")
            }
            // The session is handed over once.
            guard case .expiredToken? = await Self.providerError({ try await provider.finishLogin(loginID) }) else {
                Issue.record("a collected login cannot be collected again")
                return
            }
            #expect(!fixture.logs.text.contains("dev-1"))
            #expect(!fixture.logs.text.contains("device-access"))
        }
    }

    static let deviceEndings: [(String, ScriptedHTTPServer.Reply, ProviderError)] = [
        ("denied", .json(400, #"{"error":"access_denied"}"#), .accessDenied("the login was declined at the provider")),
        (
            "expired at the provider", .json(400, #"{"error":"expired_token"}"#),
            .expiredToken("the code expired before the login was approved")
        ),
        (
            "another error", .json(400, #"{"error":"invalid_grant","error_description":"gone"}"#),
            .invalidCredentials("the provider rejected the grant: gone")
        ),
    ]

    @Test(arguments: 0..<Self.deviceEndings.count)
    func deviceLoginsEndWithTheProvidersVerdict(_ index: Int) async throws {
        let (name, reply, expected) = Self.deviceEndings[index]
        let clock = ManualClock(now: Timestamp.now())
        try await OIDCFixture.with(clock: clock) { fixture in
            fixture.server.handle("/device") { _ in
                .json(
                    200,
                    #"{"device_code":"d","user_code":"U","verification_uri":"https://x.example/d","expires_in":60}"#
                )
            }
            fixture.server.handle("/token") { _ in reply }
            let provider = fixture.provider(clientSecret: nil)
            let loginID = try #require(try await provider.beginLogin(type: "device_code", redirectURI: nil).loginID)
            try await eventually { clock.sleeperCount == 1 }
            clock.advance(bySeconds: 5)  // the default interval
            let error = await Self.providerError { try await provider.finishLogin(loginID) }
            #expect(error == expected, "\(name)")
            // A late login_wait learns the same.
            #expect(await Self.providerError { try await provider.finishLogin(loginID) } == expected)
        }
    }

    @Test func deviceLoginsExpireLocallyAndUncollectedSessionsAreRevoked() async throws {
        let clock = ManualClock(now: Timestamp.now())
        try await OIDCFixture.with(clock: clock) { fixture in
            fixture.server.handle("/device") { _ in
                .json(
                    200,
                    #"{"device_code":"d","user_code":"U","verification_uri":"https://x.example/d","expires_in":3,"interval":1}"#
                )
            }
            fixture.server.handle("/token") { _ in .json(400, #"{"error":"authorization_pending"}"#) }
            let provider = fixture.provider(clientSecret: nil)
            let expiring = try #require(try await provider.beginLogin(type: "device_code", redirectURI: nil).loginID)
            for _ in 0..<4 {
                try await eventually { clock.sleeperCount == 1 }
                clock.advance(bySeconds: 1)
            }
            #expect(
                await Self.providerError { try await provider.finishLogin(expiring) }
                    == .expiredToken("the device code expired before the login was approved")
            )

            // Approved, but nobody calls login_wait: after ten minutes the login is forgotten and its session revoked.
            fixture.server.handle("/device") { _ in
                .json(
                    200,
                    #"{"device_code":"d2","user_code":"V","verification_uri":"https://x.example/d","interval":1}"#
                )
            }
            fixture.server.handle("/token") { _ in OIDCFixture.tokens(refresh: "uncollected-refresh") }
            fixture.server.handle("/userinfo") { _ in Self.userinfo() }
            fixture.server.handle("/revoke") { _ in .json(200, "") }
            let abandoned = try #require(try await provider.beginLogin(type: "device_code", redirectURI: nil).loginID)
            try await eventually { clock.sleeperCount == 2 }  // the expired login's grace period, and this poll
            clock.advance(bySeconds: 1)
            try await eventually { !fixture.server.requests(to: "/userinfo").isEmpty }
            try await eventually { clock.sleeperCount == 2 }
            clock.advance(bySeconds: 600)
            try await eventually { !fixture.server.requests(to: "/revoke").isEmpty }
            #expect(fixture.server.requests(to: "/revoke").first?.form["token"] == "uncollected-refresh")
            #expect(!provider.hasLogin(abandoned))
            #expect(!provider.hasLogin(expiring))
        }
    }

    @Test func deviceCodeCredentialsPointToLoginBegin() async throws {
        try await OIDCFixture.with { fixture in
            guard
                case .invalidParams(let message)? = await Self.providerError({
                    try await fixture.provider().authenticate(credentials: ["type": "device_code"])
                })
            else {
                Issue.record("device_code in login must explain the two-step flow")
                return
            }
            #expect(message.contains("login_begin"))
            guard
                case .unsupportedCredentials? = await Self.providerError({
                    try await fixture.provider().authenticate(credentials: ["type": "email_password"])
                })
            else {
                Issue.record("unknown credential types are unsupported")
                return
            }
        }
    }
}
