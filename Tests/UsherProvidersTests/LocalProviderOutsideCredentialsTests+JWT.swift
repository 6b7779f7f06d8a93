import Crypto
import Foundation
import NIOPosix
import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

@testable import UsherProviders

#if canImport(Glibc)
import Glibc
#endif

/// The `jwt` credential: a token from a configured service, checked against its keys.
extension LocalProviderOutsideCredentialsTests {
    @Test func jwtLoginIssuesLocalTokensForAStableSubject() async throws {
        let rsa = try TestIssuerKey.rsa(kid: "rsa")
        let ec = TestIssuerKey.p256(kid: "ec")
        let setup = try Setup()
        setup.configuration.jwt = OutsideTokenConfiguration(
            issuer: Self.issuer,
            audiences: ["usher"],
            keys: .file(try setup.keySet([rsa, ec]))
        )
        try await setup.run { fixture in
            let provider = fixture.provider
            let first = try await provider.authenticate(credentials: [
                "type": "jwt", "token": .string(try rsa.sign(Self.claims())),
            ])
            #expect(first.subject == "jwt:\(Self.issuer):user-1")
            #expect(first.kind == "jwt")
            #expect(first.email == "ann@example.com")
            #expect(first.tokens.refreshToken != nil)
            #expect(first.tokens.refreshExpiresAt != nil)
            // The access token is the daemon's own, for the user id.
            let accessClaims = try #require(await fixture.signer.verify(first.tokens.accessToken))
            #expect(accessClaims["sub"] == .string(User.id(provider: "local", subject: first.subject)))
            #expect(accessClaims["email"] == "ann@example.com")

            // Another token, another key, the same user: the same subject, so the same user id.
            let second = try await provider.authenticate(credentials: [
                "type": "jwt", "token": .string(try ec.sign(Self.claims())),
            ])
            #expect(second.subject == first.subject)
            #expect(
                User.id(provider: "local", subject: second.subject)
                    == User.id(provider: "local", subject: first.subject)
            )
            let other = try await provider.authenticate(
                credentials: ["type": "jwt", "token": .string(try ec.sign(Self.claims(["sub": "user-2"])))]
            )
            #expect(other.subject != first.subject)

            // Refresh and revoke work exactly as for email/password sessions.
            let session = ProviderSession(
                userID: User.id(provider: "local", subject: first.subject),
                subject: first.subject,
                tokens: first.tokens,
                providerData: nil
            )
            fixture.clock.advance(bySeconds: 60)
            let refreshed = try await fixture.refresh(session)
            #expect(refreshed.tokens.refreshToken != first.tokens.refreshToken)
            #expect(refreshed.tokens.refreshExpiresAt == first.tokens.refreshExpiresAt)
            let current = ProviderSession(
                userID: session.userID,
                subject: session.subject,
                tokens: refreshed.tokens,
                providerData: nil
            )
            #expect(await provider.revoke(current))
            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await provider.refresh(current)
            }

            // Users of outside credentials have no local account, so no API keys.
            await #expect(throws: ProviderError.unsupportedCredentials("API keys belong to email/password accounts")) {
                try await provider.createAPIKey(subject: first.subject, name: "laptop")
            }
        }
    }

    @Test func jwtClaimNamesAreConfigurable() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let setup = try Setup()
        var jwt = OutsideTokenConfiguration(
            issuer: Self.issuer,
            audiences: ["usher"],
            keys: .file(try setup.keySet([key]))
        )
        jwt.subjectClaim = "uid"
        jwt.emailClaim = "mail"
        setup.configuration.jwt = jwt
        try await setup.run { fixture in
            let login = try await fixture.provider.authenticate(
                credentials: [
                    "type": "jwt",
                    "token": .string(try key.sign(Self.claims(["uid": 4711, "mail": "bob@example.com"]))),
                ]
            )
            #expect(login.subject == "jwt:\(Self.issuer):4711")
            #expect(login.email == "bob@example.com")
            let error = await Self.failure(
                fixture.provider,
                ["type": "jwt", "token": .string(try key.sign(Self.claims()))]
            )
            #expect(error == .invalidCredentials("JWT rejected: the token has no uid claim"))
        }
    }

    @Test func jwtRefusalsSayWhichCheckFailed() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let impostor = TestIssuerKey.p256(kid: "ec")
        let setup = try Setup()
        setup.configuration.jwt = OutsideTokenConfiguration(
            issuer: Self.issuer,
            audiences: ["usher"],
            keys: .file(try setup.keySet([key]))
        )
        try await setup.run { fixture in
            let cases: [(String, String)] = [
                (try impostor.sign(Self.claims()), "the signature does not verify"),
                (try key.sign(Self.claims(["iss": "https://evil.example"])), "issuer"),
                (try key.sign(Self.claims(["aud": "someone-else"])), "audience"),
                (try key.sign(Self.claims(["exp": .int(Self.now - 3600)])), "expired"),
                (try key.sign(Self.claims(["nbf": .int(Self.now + 3600)])), "not valid yet"),
                (TestJWT.unsigned(Self.claims(), kid: "ec"), "unsupported algorithm"),
                (TestJWT.hs256(Self.claims(), secret: Array(key.publicPEM.utf8), kid: "ec"), "unsupported algorithm"),
                (try key.sign(Self.claims(), kid: "nope"), "unknown key"),
                ("not.a.jwt", "malformed"),
            ]
            for (token, check) in cases {
                let error = await Self.failure(fixture.provider, ["type": "jwt", "token": .string(token)])
                guard case .invalidCredentials(let message)? = error else {
                    Issue.record("\(check): \(String(describing: error))")
                    continue
                }
                #expect(message.hasPrefix("JWT rejected: ") && message.contains(check), "\(message)")
                #expect(!message.contains(token))
            }
            #expect(
                await Self.failure(fixture.provider, ["type": "jwt"])
                    == .invalidParams(parameter: "credentials", "jwt credentials need a string token")
            )
        }
    }
}
