import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherProviders
import UsherStore
import UsherTestSupport

/// Confirmation and password-reset tokens at the local provider, with the test clock: their lifetimes, their single
/// use, the replacement of an older token, and what a reset's write does in the database.
@Suite("Local provider: confirmation and resets", .timeLimit(.minutes(2)))
struct LocalProviderRecoveryTests {
    typealias Fixture = LocalProviderFixture

    /// A provider whose confirmation and reset hooks append their stdin to `deliveries.jsonl`, with 1 h confirmation
    /// tokens and 10 min reset tokens.
    static func withHooks<T>(_ body: (TestDirectory, Fixture) async throws -> T) async throws -> T {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let log = directory.file("deliveries.jsonl")
        try directory.writeExecutable("deliver.sh", "#!/bin/sh\n/usr/bin/cat >> '\(log)'\n")
        let hook = FunctionHookConfiguration(
            command: [directory.file("deliver.sh")],
            supervisor: try BuiltProducts.path(of: "usherd"),
            timeoutMilliseconds: 60_000
        )
        var configuration = LocalProviderConfiguration(issuer: "usher-test")
        configuration.registration.confirm = .hook
        configuration.registration.confirmHook = hook
        configuration.registration.resetHook = hook
        configuration.registration.confirmTokenLifetimeMilliseconds = 3_600_000
        configuration.registration.resetTokenLifetimeMilliseconds = 600_000
        return try await Fixture.with(configuration) { fixture in try await body(directory, fixture) }
    }

    static func deliveries(_ directory: TestDirectory) throws -> [JSONValue] {
        let text = (try? String(contentsOfFile: directory.file("deliveries.jsonl"), encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
    }

    static func lastToken(_ directory: TestDirectory) throws -> String {
        try #require(try Self.deliveries(directory).last?["token"]?.stringValue)
    }

    static func login(_ provider: LocalProvider, _ password: String) async throws -> Authentication {
        try await provider.authenticate(
            credentials: ["type": "email_password", "email": "ann@example.com", "password": .string(password)]
        )
    }

    static func error<T>(_ body: () async throws -> T) async -> ProviderError? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error as? ProviderError
        }
    }

    /// Commits a reset's write as the registry does, in a change of its own.
    static func commit(_ reset: PasswordReset, _ fixture: Fixture) async throws {
        try await fixture.database.commit(
            SessionChange(generation: nil, saved: [], deleted: [], pendingWrites: [reset.write])
        )
    }

    @Test func aConfirmationTokenWorksOnceWithinItsLifetime() async throws {
        try await Self.withHooks { directory, fixture in
            let provider = fixture.provider
            #expect(provider.confirmsAccounts)
            _ = try await provider.register(email: "ann@example.com", password: "first secret")
            let first = try Self.lastToken(directory)
            #expect(try Self.deliveries(directory).last?["purpose"] == "confirm")
            #expect(await Self.error { try await Self.login(provider, "first secret") } == .accountUnconfirmed)
            #expect(
                await Self.error { try await Self.login(provider, "wrong") }
                    == .invalidCredentials("wrong email or password")
            )
            // Only the hash is stored.
            let stored = try await fixture.database.account(
                provider: "local",
                tokenHash: SecureRandom.sha256(first),
                purpose: .confirm,
                now: fixture.clock.now()
            )
            #expect(stored?.email == "ann@example.com")

            // An hour later the token has expired; a new one works, and only once.
            fixture.clock.advance(bySeconds: 3600)
            #expect(
                await Self.error { try await provider.confirm(token: first) }
                    == .invalidToken(LocalPasswordReset.invalidToken)
            )
            try await provider.resendConfirmation(email: "ann@example.com")
            let second = try Self.lastToken(directory)
            #expect(second != first)
            fixture.clock.advance(bySeconds: 3599)
            #expect(try await provider.confirm(token: second) == "ann@example.com")
            #expect(await Self.error { try await provider.confirm(token: second) } != nil)
            _ = try await Self.login(provider, "first secret")
            // Confirmed: nothing more is sent.
            try await provider.resendConfirmation(email: "ann@example.com")
            try await provider.resendConfirmation(email: "nobody@example.com")
            #expect(try Self.deliveries(directory).count == 2)
        }
    }

    @Test func aResetTokenExpiresAndIsConsumedByItsWrite() async throws {
        try await Self.withHooks { directory, fixture in
            let provider = fixture.provider
            _ = try await provider.register(email: "ann@example.com", password: "first secret")
            _ = try await provider.confirm(token: try Self.lastToken(directory))
            try await provider.requestPasswordReset(email: "nobody@example.com")
            #expect(try Self.deliveries(directory).count == 1)
            try await provider.requestPasswordReset(email: "ann@example.com")
            let expiring = try Self.lastToken(directory)
            fixture.clock.advance(bySeconds: 600)
            #expect(
                await Self.error {
                    try await provider.completePasswordReset(token: expiring, newPassword: "second secret")
                }
                    == .invalidToken(LocalPasswordReset.invalidToken)
            )

            try await provider.requestPasswordReset(email: "ann@example.com")
            let token = try Self.lastToken(directory)
            fixture.clock.advance(bySeconds: 599)
            let reset = try await provider.completePasswordReset(token: token, newPassword: "second secret")
            #expect(reset.email == "ann@example.com")
            // Not set until the write is committed.
            _ = try await Self.login(provider, "first secret")
            try await Self.commit(reset, fixture)
            #expect(
                await Self.error { try await Self.login(provider, "first secret") }
                    == .invalidCredentials("wrong email or password")
            )
            _ = try await Self.login(provider, "second secret")
            // Used: neither the provider nor a second write accepts it.
            #expect(
                await Self.error { try await provider.completePasswordReset(token: token, newPassword: "third secret") }
                    != nil
            )
            await #expect(throws: ProviderError.invalidToken(LocalPasswordReset.invalidToken)) {
                try await Self.commit(reset, fixture)
            }
        }
    }

    @Test func aResetDeletesTheAccountsRefreshGrants() async throws {
        try await Self.withHooks { directory, fixture in
            let provider = fixture.provider
            _ = try await provider.register(email: "ann@example.com", password: "first secret")
            _ = try await provider.confirm(token: try Self.lastToken(directory))
            let session = try await Self.login(provider, "first secret")
            let providerSession = ProviderSession(
                userID: "u1",
                subject: session.subject,
                tokens: session.tokens,
                providerData: nil
            )
            let reset = try await provider.resetPassword(email: "ANN@example.com", newPassword: "second secret")
            #expect(reset.subject == session.subject)
            try await Self.commit(reset, fixture)
            #expect(
                await Self.error { try await fixture.refresh(providerSession) }
                    == .sessionRevoked("the refresh token is revoked or expired")
            )
            #expect(
                await Self.error {
                    try await provider.resetPassword(email: "nobody@example.com", newPassword: "x1234567")
                }
                    != nil
            )
        }
    }

    @Test func withoutHooksAccountsAreConfirmedAndSelfServiceIsOff() async throws {
        try await Fixture.with(LocalProviderConfiguration(issuer: "usher-test")) { fixture in
            let provider = fixture.provider
            #expect(!provider.confirmsAccounts)
            _ = try await provider.register(email: "ann@example.com", password: "first secret")
            _ = try await Self.login(provider, "first secret")
            #expect(
                await Self.error { try await provider.requestPasswordReset(email: "ann@example.com") }
                    == .unsupportedCredentials(
                        "provider local has no reset_hook: self-service password resets are turned off"
                    )
            )
            #expect(await Self.error { try await provider.resendConfirmation(email: "ann@example.com") } != nil)
        }
    }
}
