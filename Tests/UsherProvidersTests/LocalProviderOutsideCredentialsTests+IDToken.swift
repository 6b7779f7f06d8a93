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

/// The `id_token` credential: an ID token from a named issuer.
extension LocalProviderOutsideCredentialsTests {
    @Test func idTokensFromNamedIssuers() async throws {
        let google = try TestIssuerKey.rsa(kid: "g1")
        let apple = TestIssuerKey.p256(kid: "a1")
        let setup = try Setup()
        try setup.directory.write("google.json", TestJWT.keySet([google.publicJWK()]))
        try setup.directory.write("apple.json", TestJWT.keySet([apple.publicJWK()]))
        setup.configuration.idTokenIssuers["google"] = OutsideTokenConfiguration(
            issuer: "https://accounts.google.com",
            audiences: ["1234.apps.googleusercontent.com"],
            keys: .file(setup.directory.file("google.json"))
        )
        setup.configuration.idTokenIssuers["apple"] = OutsideTokenConfiguration(
            issuer: "https://appleid.apple.com",
            audiences: ["com.example.app"],
            keys: .file(setup.directory.file("apple.json"))
        )
        // A key server that is not there: nothing can ever be cached.
        setup.configuration.idTokenIssuers["down"] = OutsideTokenConfiguration(
            issuer: "https://down.example",
            audiences: ["usher"],
            keys: .url("http://127.0.0.1:9/jwks.json")
        )
        try await setup.run { fixture in
            let provider = fixture.provider
            let googleClaims: [String: JSONValue] = [
                "iss": "https://accounts.google.com", "aud": "1234.apps.googleusercontent.com",
                "sub": "10769150350006150715113082367",
                "email": "ann@gmail.com", "email_verified": true, "name": "Ann", "nonce": "n-1",
                "iat": .int(Self.now), "exp": .int(Self.now + 3600),
            ]
            let login = try await provider.authenticate(
                credentials: [
                    "type": "id_token", "issuer": "google", "token": .string(try google.sign(googleClaims)),
                    "nonce": "n-1",
                ]
            )
            #expect(login.subject == "id_token:https://accounts.google.com:10769150350006150715113082367")
            #expect(login.kind == "id_token")
            #expect(login.email == "ann@gmail.com")
            #expect(login.name == "Ann")

            // The nonce the client passes must be the token's.
            #expect(
                await Self.failure(
                    provider,
                    [
                        "type": "id_token", "issuer": "google", "token": .string(try google.sign(googleClaims)),
                        "nonce": "n-2",
                    ]
                ) == .invalidCredentials("ID token rejected: the nonce does not match")
            )
            // A Google token is not an Apple token.
            #expect(
                await Self.failure(
                    provider,
                    ["type": "id_token", "issuer": "apple", "token": .string(try google.sign(googleClaims))]
                ) == .invalidCredentials("ID token rejected: unknown key: no key with kid \"g1\"")
            )
            // An unverified email is not taken.
            let appleLogin = try await provider.authenticate(
                credentials: [
                    "type": "id_token", "issuer": "apple",
                    "token": .string(
                        try apple.sign([
                            "iss": "https://appleid.apple.com", "aud": "com.example.app", "sub": "001234.abcd",
                            "email": "x@privaterelay.appleid.com", "email_verified": "false",
                            "exp": .int(Self.now + 600),
                        ])
                    ),
                ]
            )
            #expect(appleLogin.subject == "id_token:https://appleid.apple.com:001234.abcd")
            #expect(appleLogin.email == nil)

            // Issuers that are not configured, and keys that cannot be had.
            guard
                case .unsupportedCredentials(let message)? = await Self.failure(
                    provider,
                    ["type": "id_token", "issuer": "facebook", "token": "x.y.z"]
                )
            else {
                Issue.record("an unknown issuer name was not unsupported")
                return
            }
            #expect(message.contains("facebook") && message.contains("google"))
            guard
                case .unavailable? = await Self.failure(
                    provider,
                    ["type": "id_token", "issuer": "down", "token": .string(try apple.sign(Self.claims()))]
                )
            else {
                Issue.record("an unreachable JWK set URL did not make the provider unavailable")
                return
            }
            #expect(
                await Self.failure(provider, ["type": "id_token", "token": "x.y.z"])
                    == .invalidParams(
                        parameter: "credentials",
                        "id_token credentials need a string issuer (a configured issuer's name)"
                    )
            )
        }
    }
}
