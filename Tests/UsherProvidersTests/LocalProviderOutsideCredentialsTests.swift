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

/// The local provider's outside credentials: `jwt`, `id_token` and `function`, against the in-memory database.
@Suite(.timeLimit(.minutes(2)))
struct LocalProviderOutsideCredentialsTests {
    static let issuer = "https://auth.example.com"
    static let now: Int64 = 1_800_000_000

    typealias Fixture = LocalProviderFixture

    /// A test directory holding the hook script, and the configuration of the provider under test; the directory is
    /// removed when the setup goes away.
    final class Setup {
        let directory: TestDirectory
        let hook: String
        var configuration = LocalProviderConfiguration(issuer: "usher-test")

        init() throws {
            self.directory = try TestDirectory()
            self.hook = try TestHooks.install(in: self.directory)
        }

        deinit { self.directory.remove() }

        /// Writes `keys` as a JWK set file and returns its path.
        func keySet(_ keys: [TestIssuerKey], named name: String = "jwks.json") throws -> String {
            try self.directory.write(name, TestJWT.keySet(keys.map { $0.publicJWK() }))
            return self.directory.file(name)
        }

        /// Runs `body` with a local provider of this configuration, a cheap scrypt cost on a one-thread pool, an
        /// in-memory database and a manual clock.
        func run<T>(_ body: (Fixture) async throws -> T) async throws -> T {
            try await Fixture.with(self.configuration, body)
        }
    }

    static func claims(_ changes: [String: JSONValue] = [:]) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": .string(Self.issuer), "aud": "usher", "sub": "user-1", "email": "ann@example.com",
            "iat": .int(Self.now), "exp": .int(Self.now + 600),
        ]
        claims.merge(changes) { _, new in new }
        return claims
    }

    /// The error `authenticate` throws, or nil when it accepts.
    static func failure(_ provider: LocalProvider, _ credentials: [String: JSONValue]) async -> ProviderError? {
        do {
            _ = try await provider.authenticate(credentials: credentials)
            return nil
        } catch let error as ProviderError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    // MARK: Configuration and listing

    @Test func credentialTypesFollowTheConfiguration() async throws {
        try await Setup().run { fixture in
            #expect(fixture.provider.credentialTypes == ["email_password", "anonymous", "api_key"])
            for type in ["jwt", "id_token", "function"] {
                guard
                    case .unsupportedCredentials(let message)? = await Self.failure(
                        fixture.provider,
                        ["type": .string(type)]
                    )
                else {
                    Issue.record("\(type) without configuration was not unsupported")
                    continue
                }
                #expect(message.contains(type))
            }
        }
        let setup = try Setup()
        setup.configuration.jwt = OutsideTokenConfiguration(
            issuer: Self.issuer,
            audiences: ["usher"],
            keys: .file("/x")
        )
        setup.configuration.idTokenIssuers["google"] = OutsideTokenConfiguration(
            issuer: "https://accounts.google.com",
            audiences: ["1234.apps.googleusercontent.com"],
            keys: .url("https://www.googleapis.com/oauth2/v3/certs")
        )
        setup.configuration.function = FunctionHookConfiguration(
            command: [setup.hook],
            supervisor: try Self.supervisor()
        )
        try await setup.run { fixture in
            #expect(
                fixture.provider.credentialTypes == [
                    "email_password", "anonymous", "api_key", "jwt", "id_token", "function",
                ]
            )
        }
    }
}
