import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// Which email the OpenID Connect provider takes.
extension OIDCProviderTests {
    // MARK: - email_verified

    /// `email_verified` values, and whether the email is taken: only JSON `true` verifies.
    static let emailVerifiedCases: [(JSONValue?, Bool)] = [
        (true, true), (nil, false), (false, false), ("true", false), ("false", false), ("False", false),
        (0, false), (1, false), ("", false),
    ]

    @Test(arguments: 0..<Self.emailVerifiedCases.count)
    func onlyJSONTrueVerifiesTheEmail(_ index: Int) async throws {
        let (value, verifies) = Self.emailVerifiedCases[index]
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
}
