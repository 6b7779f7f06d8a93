import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// Whose email outside credentials vouch for.
extension LocalProviderOutsideCredentialsTests {
    /// `email_verified` values and whether the email is taken: from an ID token only with JSON `true`; from a `jwt`
    /// also without the claim (the configured service vouches for its email claim), but never with a claim that is
    /// not `true`.
    static let emailVerifiedCases: [(JSONValue?, idToken: Bool, jwt: Bool)] = [
        (true, true, true),
        (nil, false, true),
        (false, false, false),
        ("true", false, false),
        ("false", false, false),
        ("False", false, false),
        (0, false, false),
        (1, false, false),
        (.null, false, false),
        ("", false, false),
        (["true"], false, false),
    ]

    @Test(arguments: NamedCase.cases(Self.emailVerifiedCases) { "email_verified " + JSONValue.label($0.0) })
    func onlyJSONTrueVerifiesAnEmail(_ testCase: NamedCase<(JSONValue?, idToken: Bool, jwt: Bool)>) async throws {
        let (value, idTokenKeeps, jwtKeeps) = testCase.value
        let key = TestIssuerKey.p256(kid: "k1")
        let setup = try Setup()
        let keys = try setup.keySet([key])
        setup.configuration.jwt = OutsideTokenConfiguration(
            issuer: Self.issuer,
            audiences: ["usher"],
            keys: .file(keys)
        )
        setup.configuration.idTokenIssuers["corp"] = OutsideTokenConfiguration(
            issuer: Self.issuer,
            audiences: ["usher"],
            keys: .file(keys)
        )
        try await setup.run { fixture in
            var claims = Self.claims()
            if let value { claims["email_verified"] = value }
            let token = JSONValue.string(try key.sign(claims))
            let viaIDToken = try await fixture.provider.authenticate(
                credentials: ["type": "id_token", "issuer": "corp", "token": token]
            )
            #expect(
                viaIDToken.email == (idTokenKeeps ? "ann@example.com" : nil),
                "id_token, email_verified \(value.map { "\($0)" } ?? "absent")"
            )
            let viaJWT = try await fixture.provider.authenticate(credentials: ["type": "jwt", "token": token])
            #expect(
                viaJWT.email == (jwtKeeps ? "ann@example.com" : nil),
                "jwt, email_verified \(value.map { "\($0)" } ?? "absent")"
            )
        }
    }
}
