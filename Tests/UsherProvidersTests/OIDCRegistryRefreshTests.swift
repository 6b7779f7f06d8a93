import Logging
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

@testable import UsherProviders

/// OpenID Connect refreshes through the session registry, against a scripted provider that rotates refresh tokens
/// strictly (a replaced refresh token is refused with `invalid_grant`, as Keycloak, Okta and Auth0 do with rotation
/// turned on): what an answer that could not be stored, and a refused client, do to the user.
@Suite(.timeLimit(.minutes(2)))
struct OIDCRegistryRefreshTests {
    /// The scripted token endpoint's state: the refresh token it honours now, and the ones it was shown.
    struct TokenEndpoint: Sendable {
        var issued = 0
        var current: String?
        /// The refresh token before `current`, honoured too when the provider allows reuse.
        var previous: String?
        var allowsReuse = false
        var presented: [String] = []
    }

    /// A registry over `OIDCProvider` and a database whose commits fail on demand, on a manual clock.
    struct Setup {
        let fixture: OIDCFixture
        let clock: ManualClock
        let database: AppDatabase
        let store: FailingStore
        let provider: OIDCProvider
        let registry: SessionRegistry
        let endpoint = Locked(TokenEndpoint())

        init(_ fixture: OIDCFixture, clock: ManualClock) async throws {
            self.fixture = fixture
            self.clock = clock
            self.database = try AppDatabase.inMemory()
            self.store = FailingStore(self.database)
            self.provider = fixture.provider()
            self.registry = SessionRegistry(
                store: self.store,
                providers: [self.provider],
                defaultProvider: "corp",
                clock: clock,
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            )
            try await self.registry.load()
            let endpoint = self.endpoint
            fixture.server.handle("/token") { request in
                let grant = request.form["grant_type"]
                let presented = request.form["refresh_token"]
                let accepted = endpoint.withLock { state -> String? in
                    if grant == "refresh_token" {
                        state.presented.append(presented ?? "")
                        guard presented == state.current || (state.allowsReuse && presented == state.previous) else {
                            return nil
                        }
                    }
                    state.issued += 1
                    state.previous = state.current
                    state.current = "refresh-\(state.issued)"
                    return state.current
                }
                guard let accepted else {
                    return .json(400, #"{"error":"invalid_grant","error_description":"token already used"}"#)
                }
                return OIDCFixture.tokens(access: "access-\(accepted.dropFirst(8))", refresh: accepted, expiresIn: 600)
            }
            fixture.server.handle("/userinfo") { _ in OIDCProviderTests.userinfo() }
        }

        /// A registry on the same database, as after the daemon was killed and started again.
        func restarted() async throws -> SessionRegistry {
            let registry = SessionRegistry(
                store: self.database,
                providers: [self.provider],
                defaultProvider: "corp",
                clock: self.clock,
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            )
            try await registry.load()
            return registry
        }

        func logIn() async throws -> UserInfo {
            try await self.registry.login(provider: nil, credentials: OIDCProviderTests.password).user
        }

        func storedRefreshToken() async throws -> String? {
            try await self.database.loadSessions().users.first?.tokens?.refreshToken
        }

        var presented: [String] { self.endpoint.withLock { $0.presented } }
    }

    static func with(_ body: @Sendable (Setup) async throws -> Void) async throws {
        let clock = ManualClock()
        try await OIDCFixture.with(clock: clock) { fixture in
            try await body(try await Setup(fixture, clock: clock))
        }
    }

    @Test func anAnswerThatCouldNotBeStoredIsStoredLaterAndItsRefreshTokenUsed() async throws {
        try await Self.with { setup in
            let user = try await setup.logIn()
            #expect(try await setup.storedRefreshToken() == "refresh-1")
            setup.clock.advance(bySeconds: 60)
            setup.store.failNextCommits(1)
            await #expect(throws: FailingStore.DiskFull.self) {
                try await setup.registry.refresh(userID: user.id)
            }
            // The provider rotated (refresh-1 is dead there), but the old token stays stored until the new one is.
            #expect(setup.presented == ["refresh-1"])
            #expect(try await setup.storedRefreshToken() == "refresh-1")
            #expect(await setup.registry.listUsers().users.first?.state == .loggedIn)

            // The next attempt stores the held answer instead of presenting the dead token again.
            _ = try await setup.registry.refresh(userID: user.id)
            #expect(setup.presented == ["refresh-1"])
            #expect(try await setup.storedRefreshToken() == "refresh-2")

            // And a later refresh presents the new token.
            setup.clock.advance(bySeconds: 60)
            _ = try await setup.registry.refresh(userID: user.id)
            #expect(setup.presented == ["refresh-1", "refresh-2"])
            #expect(try await setup.storedRefreshToken() == "refresh-3")
            let after = try #require(await setup.registry.listUsers().users.first)
            #expect(after.state == .loggedIn)
            #expect(after.tokenState == .fresh)
        }
    }

    @Test func afterACrashTheStoredOldTokenIsPresentedAgain() async throws {
        try await Self.with { setup in
            setup.endpoint.withLock { $0.allowsReuse = true }
            let user = try await setup.logIn()
            setup.clock.advance(bySeconds: 60)
            setup.store.failNextCommits(1)
            await #expect(throws: FailingStore.DiskFull.self) {
                try await setup.registry.refresh(userID: user.id)
            }
            // The daemon dies before the answer is stored: what it still has is the old token, which a provider that
            // allows reuse (or has a reuse grace period) accepts.
            let restarted = try await setup.restarted()
            _ = try await restarted.refresh(userID: user.id)
            #expect(setup.presented == ["refresh-1", "refresh-1"])
            #expect(try await setup.storedRefreshToken() == "refresh-3")
            #expect(await restarted.listUsers().users.first?.state == .loggedIn)
        }
    }

    @Test func invalidClientKeepsTheUserAndStopsAskingButInvalidGrantEndsTheSession() async throws {
        try await Self.with { setup in
            let user = try await setup.logIn()
            setup.fixture.server.handle("/token") { _ in
                .json(401, #"{"error":"invalid_client","error_description":"Invalid client credentials"}"#)
            }
            setup.clock.advance(bySeconds: 60)
            let failedAt = setup.clock.now()
            guard
                case .misconfigured? = await OIDCProviderTests.providerError({
                    try await setup.registry.refresh(userID: user.id)
                })
            else {
                Issue.record("invalid_client is a configuration error")
                return
            }
            let refused = try #require(await setup.registry.listUsers().users.first)
            #expect(refused.state == .loggedIn)
            #expect(refused.tokenState == .retrying)
            #expect(refused.lastRefreshError == .providerMisconfigured)
            #expect(refused.retryAt == failedAt.adding(milliseconds: 3_600_000))
            let requests = setup.fixture.server.requests(to: "/token").count

            // More requests within the hour do not reach the provider; the stored token is still handed out.
            for _ in 0..<5 {
                guard
                    case .misconfigured? = await OIDCProviderTests.providerError({
                        try await setup.registry.refresh(userID: user.id)
                    })
                else {
                    Issue.record("a refresh within the backoff fails at once")
                    return
                }
            }
            #expect(try await setup.registry.accessToken(userID: nil, minValidSeconds: 3600).accessToken == "access-1")
            #expect(setup.fixture.server.requests(to: "/token").count == requests)

            // invalid_grant still means the session is over.
            setup.fixture.server.handle("/token") { _ in .json(400, #"{"error":"invalid_grant"}"#) }
            await setup.registry.reconfigure(
                providers: [setup.provider],
                defaultProvider: "corp",
                configuration: RegistryConfiguration()
            )
            await #expect(throws: SessionError.userLoggedOut(user.id)) {
                try await setup.registry.refresh(userID: user.id)
            }
            let stored = try await setup.database.loadSessions().users.first
            #expect(stored?.state == .loggedOut)
        }
    }
}
