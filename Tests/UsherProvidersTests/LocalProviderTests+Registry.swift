import Crypto
import Logging
import NIOPosix
import Testing
import UsherCore
import UsherProtocol
import UsherProviders
import UsherStore
import UsherTestSupport

/// The local provider behind the session registry: one user per account, and a session that ends on time.
extension LocalProviderTests {
    @Test("through the registry, an API key logs in as the same user as the password", .timeLimit(.minutes(1)))
    func registryWithLocalProvider() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let database = fixture.database
            let clock = fixture.clock
            let registry = SessionRegistry(
                store: database,
                providers: [provider],
                defaultProvider: "local",
                clock: clock,
                logger: Self.quietLogger
            )
            try await registry.load()
            _ = try await registry.register(provider: nil, email: "a@example.com", password: "secret1")
            let user = try await registry.login(
                provider: nil,
                credentials: Self.emailPassword("a@example.com", "secret1")
            ).user
            let created = try await registry.createAPIKey(name: "ci", userID: nil, ownership: .everyone)
            #expect(created.userID == user.id)
            #expect(try await registry.listAPIKeys(userID: nil, ownership: .everyone).apiKeys.map(\.name) == ["ci"])
            _ = try await registry.logout(userID: nil)

            let viaKey = try await registry.login(
                provider: nil,
                credentials: ["type": "api_key", "key": .string(created.key)]
            ).user
            #expect(viaKey.id == user.id)
            #expect(viaKey.email == "a@example.com")
            #expect(await registry.listUsers().users.count == 1)

            // The registry's refresh rotates at the provider and keeps the new token.
            let before = try #require(try await database.loadSessions().users.first?.tokens)
            clock.advance(bySeconds: 60)
            _ = try await registry.refresh(userID: nil)
            let after = try #require(try await database.loadSessions().users.first?.tokens)
            #expect(after.refreshToken != before.refreshToken)
            await #expect(throws: ProviderError.self) {
                try await provider.refresh(Self.session(user.id, before))
            }

            _ = try await registry.deleteAPIKey(name: "ci", userID: nil, ownership: .everyone)
            await #expect(throws: SessionError.apiKeyNotFound("ci")) {
                try await registry.deleteAPIKey(name: "ci", userID: nil, ownership: .everyone)
            }
            _ = try await registry.logout(userID: nil)
            await #expect(throws: ProviderError.invalidCredentials("unknown or deleted API key")) {
                try await registry.login(provider: nil, credentials: ["type": "api_key", "key": .string(created.key)])
            }
        }
    }

    @Test("a session ends at its absolute lifetime, without refreshes that cannot extend it", .timeLimit(.minutes(1)))
    func sessionEnd() async throws {
        try await Self.withProvider(
            accessLifetimeMilliseconds: 30 * 60_000,
            refreshLifetimeMilliseconds: 60 * 60_000
        ) { fixture in
            let clock = fixture.clock
            let registry = SessionRegistry(
                store: fixture.database,
                providers: [fixture.provider],
                defaultProvider: "local",
                clock: clock,
                logger: Self.quietLogger
            )
            try await registry.load()
            _ = try await registry.register(provider: nil, email: "a@example.com", password: "secret1")
            let end = clock.now().adding(seconds: 3600)
            let user = try await registry.login(
                provider: nil,
                credentials: Self.emailPassword("a@example.com", "secret1")
            ).user
            #expect(user.refreshTokenExpiresAt == end)
            var log = EventLog(registry)
            log.names = [user.id: "a"]

            var seen: [String] = []
            var expiries: [Timestamp] = []
            try await withRunningScheduler(registry) {
                // Jump from one deadline to the next until the session is over.
                while seen.count < 10, let deadline = registry.scheduler.earliestDeadline() {
                    clock.advance(byMilliseconds: deadline.millisecondsSinceEpoch - clock.now().millisecondsSinceEpoch)
                    let event = try #require(await log.next())
                    seen.append(log.summary(event))
                    if case .tokenRefreshed(_, let expiresAt) = event.payload { expiries.append(expiresAt) }
                    if event.name == .userLoggedOut { _ = await log.next() }
                }
            }
            #expect(
                seen == [
                    "1 token_refreshed a", "1 token_refreshed a", "2 user_logged_out a refresh_token_expired",
                ]
            )
            #expect(expiries.last == end, "the last refresh gives a token that lasts as long as the session")
            #expect(clock.now() == end)
            await #expect(throws: SessionError.userLoggedOut(user.id)) {
                try await registry.accessToken(userID: user.id, minValidSeconds: 0)
            }
        }
    }
}
