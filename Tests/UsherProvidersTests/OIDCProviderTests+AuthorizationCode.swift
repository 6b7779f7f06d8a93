import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// The authorization code grant with PKCE, and how ID tokens are verified.
extension OIDCProviderTests {
    @Test func authorizationCodeLoginChecksStatePKCEAndNonce() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider(clientSecret: nil)
            let issued = fixture.answerCodesWithIDTokens()
            fixture.server.handle("/userinfo") { _ in Self.userinfo(["name": "Someone Else", "locale": "en"]) }

            /// Starts a login and plays the provider's part: returns the credentials the client would send.
            func begin(redirectURI: String? = nil) async throws -> (StartedLogin, [String: JSONValue]) {
                let begun = try await provider.beginLogin(
                    type: .authorizationCode,
                    redirectURI: redirectURI,
                    owner: 1000
                )
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
            #expect(begun.type == .authorizationCode)
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
                type: .authorizationCode,
                redirectURI: "http://127.0.0.1:5555/callback",
                owner: 1000
            )
            #expect(explicit.redirectURI == "http://127.0.0.1:5555/callback")
            for bad in [
                "http://127.0.0.1:5555/other", "http://localhost:5555/callback", "https://127.0.0.1:5555/callback",
            ] {
                guard
                    case .invalidParams? = await Self.providerError({
                        try await provider.beginLogin(type: .authorizationCode, redirectURI: bad, owner: 1000)
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

    @Test(arguments: NamedCase.cases(Self.idTokenProblems) { $0.0 })
    func idTokensAreVerified(_ testCase: NamedCase<(String, [String: JSONValue], Bool, String)>) async throws {
        let (name, changes, otherKey, fragment) = testCase.value
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider(clientSecret: nil)
            let begun = try await provider.beginLogin(type: .authorizationCode, redirectURI: nil, owner: 1000)
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
}
