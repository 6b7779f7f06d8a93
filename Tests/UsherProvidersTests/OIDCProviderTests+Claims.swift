import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// Which email the OpenID Connect provider takes, and which grants it uses.
extension OIDCProviderTests {
    /// `email_verified` values, and whether the email is taken: only JSON `true` verifies.
    static let emailVerifiedCases: [(JSONValue?, Bool)] = [
        (true, true), (nil, false), (false, false), ("true", false), ("false", false), ("False", false),
        (0, false), (1, false), ("", false),
    ]

    @Test(arguments: NamedCase.cases(Self.emailVerifiedCases) { "email_verified " + JSONValue.label($0.0) })
    func onlyJSONTrueVerifiesTheEmail(_ testCase: NamedCase<(JSONValue?, Bool)>) async throws {
        let (value, verifies) = testCase.value
        let label = value.map { "\($0)" } ?? "absent"
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider()
            // In the ID token (userinfo adds nothing about the email).
            let idToken = try fixture.idToken(["email_verified": value ?? .null])
            fixture.server.handle("/token") { _ in OIDCFixture.tokens(idToken: idToken) }
            fixture.server.handle("/userinfo") { _ in .json(200, #"{"sub":"user-1"}"#) }
            let fromIDToken = try await provider.authenticate(credentials: Self.password)
            #expect(fromIDToken.email == (verifies ? "ada@example.com" : nil), "ID token, email_verified \(label)")
            #expect(fromIDToken.name == "Ada Lovelace")

            // In userinfo, for a grant that returns no ID token.
            fixture.server.handle("/token") { _ in OIDCFixture.tokens() }
            var body: [String: JSONValue] = ["sub": "user-1", "email": "ada@example.com"]
            if let value { body["email_verified"] = value }
            let userinfo = TestJWT.json(body)
            fixture.server.handle("/userinfo") { _ in .json(200, userinfo) }
            let fromUserinfo = try await provider.authenticate(credentials: Self.password)
            #expect(fromUserinfo.email == (verifies ? "ada@example.com" : nil), "userinfo, email_verified \(label)")
        }
    }

    // MARK: - grant_types

    @Test func configuredGrantTypesOverrideDiscovery() async throws {
        try await OIDCFixture.with { fixture in
            // A provider whose discovery lists only the authorization code grant, but whose token endpoint takes the
            // password grant.
            fixture.serveDiscovery(["grant_types_supported": ["authorization_code"]])
            fixture.server.handle("/token") { request in
                request.form["grant_type"] == "password"
                    ? OIDCFixture.tokens(idToken: try? fixture.idToken())
                    : .json(400, #"{"error":"unsupported_grant_type"}"#)
            }
            fixture.server.handle("/userinfo") { _ in Self.userinfo() }

            // Trusting discovery: refused without a request to the token endpoint, as before.
            let trusting = fixture.provider()
            guard
                case .unsupportedCredentials(let message)? = await Self.providerError({
                    try await trusting.authenticate(credentials: Self.password)
                })
            else {
                Issue.record("the password grant is not in discovery: refused")
                return
            }
            #expect(message.contains("password"))
            #expect(fixture.server.requests(to: "/token").isEmpty)
            #expect(trusting.credentialTypes == ["authorization_code"])

            // grant_types = ["password"]: the login goes to the token endpoint, and listings follow the setting.
            let configured = fixture.provider(grantTypes: ["password"])
            let authentication = try await configured.authenticate(credentials: Self.password)
            #expect(authentication.subject == "user-1")
            #expect(fixture.server.requests(to: "/token").map { $0.form["grant_type"] } == ["password"])
            #expect(configured.credentialTypes == ["password"])
        }
    }
}
