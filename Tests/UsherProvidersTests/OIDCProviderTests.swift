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

    @Test(arguments: NamedCase.cases(Self.loginFailures) { $0.0 })
    func loginFailuresBecomeClearErrors(
        _ testCase: NamedCase<(String, ScriptedHTTPServer.Reply, ProviderError)>
    ) async throws {
        let (name, reply, expected) = testCase.value
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
}
