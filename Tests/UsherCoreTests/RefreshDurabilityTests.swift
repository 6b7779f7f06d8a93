import Crypto
import NIOPosix
import Testing
import UsherCore
import UsherProtocol
import UsherProviders
import UsherStore
import UsherTestSupport

/// A refresh is one atomic change: the provider's answer is stored with the tokens it replaces, or not at all, and an
/// answer that could not be stored is stored later instead of asking the provider again with the replaced token.
@Suite("Refresh durability")
struct RefreshDurabilityTests {
    /// A registry over the real local provider on one in-memory database, whose commits fail on demand.
    private struct LocalSetup {
        let clock = ManualClock()
        let database: AppDatabase
        let store: FailingStore
        let provider: LocalProvider
        let registry: SessionRegistry

        init(pool: NIOThreadPool) async throws {
            self.database = try AppDatabase.inMemory()
            self.store = FailingStore(self.database)
            self.provider = LocalProvider(
                name: "local",
                configuration: LocalProviderConfiguration(issuer: "usher-test"),
                database: self.database,
                signer: TokenSigner(privateKey: P256.Signing.PrivateKey()),
                hasher: PasswordHasher(
                    threadPool: pool,
                    parameters: PasswordHasher.Parameters(logN: 10, blockSize: 8, parallelism: 1)
                ),
                clock: self.clock
            )
            self.registry = Self.registry(store: self.store, provider: self.provider, clock: self.clock)
            try await self.registry.load()
        }

        private static func registry(
            store: any SessionStore,
            provider: LocalProvider,
            clock: ManualClock
        ) -> SessionRegistry {
            SessionRegistry(
                store: store,
                providers: [provider],
                defaultProvider: "local",
                clock: clock,
                logger: Harness.logger
            )
        }

        /// A registry on the same database, as after the daemon was killed and started again.
        func restarted() -> SessionRegistry {
            Self.registry(store: self.database, provider: self.provider, clock: self.clock)
        }

        /// Whether the local provider still honours `refreshToken` (its grant exists and is unexpired).
        func grantExists(for refreshToken: String?) async throws -> Bool {
            guard let refreshToken else { return false }
            let hash = SecureRandom.sha256(refreshToken)
            return try await self.database.refreshGrant(provider: "local", tokenHash: hash, now: self.clock.now())
                != nil
        }
    }

    private static func withLocalSetup(_ body: (LocalSetup) async throws -> Void) async throws {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        do {
            try await body(try await LocalSetup(pool: pool))
            try await pool.shutdownGracefully()
        } catch {
            try await pool.shutdownGracefully()
            throw error
        }
    }

    private static func logIn(_ setup: LocalSetup) async throws -> UserInfo {
        _ = try await setup.registry.register(provider: nil, email: "a@example.com", password: "secret1")
        return try await setup.registry.login(
            provider: nil,
            credentials: ["type": "email_password", "email": "a@example.com", "password": "secret1"]
        ).user
    }

    @Test(
        "local provider: a commit that fails after the provider answered leaves the old refresh token valid",
        .timeLimit(.minutes(1))
    )
    func failedCommitKeepsTheOldGrant() async throws {
        try await Self.withLocalSetup { setup in
            let user = try await Self.logIn(setup)
            let before = try #require(try await setup.database.loadSessions().users.first?.tokens)
            setup.clock.advance(bySeconds: 60)
            setup.store.failNextCommits(1)
            await #expect(throws: FailingStore.DiskFull.self) {
                try await setup.registry.refresh(userID: user.id)
            }
            #expect(setup.store.failedCommits == 1)
            // Nothing of the refresh is durable: the stored token is the old one, and its grant was not consumed.
            #expect(try await setup.database.loadSessions().users.first?.tokens == before)
            #expect(try await setup.grantExists(for: before.refreshToken))

            // The daemon dies now and starts again: the stored refresh token still works.
            let restarted = setup.restarted()
            try await restarted.load()
            setup.clock.advance(bySeconds: 60)
            let refreshed = try await restarted.refresh(userID: user.id)
            #expect(refreshed.userID == user.id)
            let after = try #require(try await setup.database.loadSessions().users.first?.tokens)
            #expect(after.refreshToken != before.refreshToken)
            #expect(try await setup.grantExists(for: after.refreshToken))
            #expect(try await !setup.grantExists(for: before.refreshToken), "the old grant is consumed with the commit")
            #expect(await restarted.listUsers().users.first?.state == .loggedIn)
        }
    }

    @Test(
        "local provider: after a failed commit, the next attempt stores the answer and its rotation together",
        .timeLimit(.minutes(1))
    )
    func failedCommitIsStoredLater() async throws {
        try await Self.withLocalSetup { setup in
            let user = try await Self.logIn(setup)
            let before = try #require(try await setup.database.loadSessions().users.first?.tokens)
            setup.clock.advance(bySeconds: 60)
            setup.store.failNextCommits(1)
            await #expect(throws: FailingStore.DiskFull.self) {
                try await setup.registry.refresh(userID: user.id)
            }
            let retrying = try #require(await setup.registry.listUsers().users.first)
            #expect(retrying.state == .loggedIn)
            #expect(retrying.tokenState == .retrying)
            #expect(retrying.lastRefreshError == .internal)
            // Until the answer is durable, the stored access token is the one handed out.
            #expect(
                try await setup.registry.accessToken(userID: nil, minValidSeconds: 0).accessToken == before.accessToken
            )

            setup.clock.advance(bySeconds: 10)
            _ = try await setup.registry.refresh(userID: user.id)
            let after = try #require(try await setup.database.loadSessions().users.first?.tokens)
            #expect(after.refreshToken != before.refreshToken)
            #expect(after.issuedAt == before.issuedAt.adding(seconds: 60), "the answer of the first attempt")
            #expect(try await setup.grantExists(for: after.refreshToken))
            #expect(try await !setup.grantExists(for: before.refreshToken))
            let fresh = try #require(await setup.registry.listUsers().users.first)
            #expect(fresh.tokenState == .fresh)
            #expect(fresh.lastRefreshError == nil)
            #expect(
                try await setup.registry.accessToken(userID: nil, minValidSeconds: 0).accessToken == after.accessToken
            )
        }
    }

    @Test(
        "local provider: a rotation whose grant is gone fails the whole commit and ends the session",
        .timeLimit(.minutes(1))
    )
    func rotationOfAGoneGrantEndsTheSession() async throws {
        try await Self.withLocalSetup { setup in
            let user = try await Self.logIn(setup)
            let before = try #require(try await setup.database.loadSessions().users.first?.tokens)
            setup.clock.advance(bySeconds: 60)
            setup.store.failNextCommits(1)
            await #expect(throws: FailingStore.DiskFull.self) {
                try await setup.registry.refresh(userID: user.id)
            }
            // Meanwhile the grant goes away (revoked elsewhere): storing the held answer must not resurrect it.
            let session = ProviderSession(userID: user.id, subject: "", tokens: before, providerData: nil)
            #expect(await setup.provider.revoke(session))
            await #expect(throws: SessionError.userLoggedOut(user.id)) {
                try await setup.registry.refresh(userID: user.id)
            }
            let stored = try #require(try await setup.database.loadSessions().users.first)
            #expect(stored.state == .loggedOut)
            #expect(stored.tokens == nil)
        }
    }

    @Test(
        "a refresh answered but not stored is stored by the next attempt, and later refreshes use its refresh token",
        .timeLimit(.minutes(1))
    )
    func heldAnswerIsStoredNotRefreshedAgain() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        var log = EventLog(harness.registry)
        harness.clock.advance(bySeconds: 3400)
        harness.store.failNextCommits(1)
        await #expect(throws: FailingStore.DiskFull.self) {
            try await harness.registry.refresh(userID: a.id)
        }
        #expect(harness.provider.refreshCalls.map(\.refreshToken) == ["refresh-1"])
        #expect(try await harness.storedTokens(a.id)?.refreshToken == "refresh-1", "the old token stays stored")
        let event = try #require(await log.next())
        guard case .refreshFailed(a.id, .internal, _, let retryAt?) = event.payload else {
            Issue.record("expected refresh_failed internal with retry_at, got \(event)")
            return
        }
        let retrying = try #require(await harness.user(a.id))
        #expect(retrying.state == .loggedIn)
        #expect(retrying.tokenState == .retrying)
        #expect(retrying.retryAt == retryAt)
        let errors = harness.logs.all.filter { $0.level == .error }
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("could not store refreshed tokens") == true)
        #expect(errors.first?.metadata["error"]?.contains("simulated") == true)
        #expect(errors.first?.metadata["retry_at"] == "\(retryAt)")
        // The unstored access token is not handed out; the stored one still is.
        #expect(try await harness.registry.accessToken(userID: nil, minValidSeconds: 0).accessToken == "access-1")

        // The scheduled retry stores the held answer: no second call to the provider.
        try await withRunningScheduler(harness.registry) {
            #expect(await waitUntilSleeping(harness.clock))
            harness.clock.advance(
                byMilliseconds: retryAt.millisecondsSinceEpoch - harness.clock.now().millisecondsSinceEpoch
            )
            let stored = try #require(await log.next())
            #expect(stored.name == .tokenRefreshed)
        }
        #expect(harness.provider.refreshCallCount == 1)
        #expect(try await harness.storedTokens(a.id)?.refreshToken == "refresh-2")
        #expect(try await harness.registry.accessToken(userID: nil, minValidSeconds: 0).accessToken == "access-2")
        #expect(await harness.user(a.id)?.tokenState == .fresh)

        // The next refresh presents the new refresh token, never the one it replaced.
        _ = try await harness.registry.refresh(userID: a.id)
        #expect(harness.provider.refreshCalls.map(\.refreshToken) == ["refresh-1", "refresh-2"])
        #expect(try await harness.storedTokens(a.id)?.refreshToken == "refresh-3")
    }

    @Test(
        "storing that keeps failing retries with backoff and never asks the provider again; logout revokes both",
        .timeLimit(.minutes(1))
    )
    func storingKeepsFailing() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.clock.advance(bySeconds: 3400)
        harness.store.failNextCommits(3)
        for _ in 0..<3 {
            await #expect(throws: FailingStore.DiskFull.self) {
                try await harness.registry.refresh(userID: a.id)
            }
        }
        #expect(harness.provider.refreshCallCount == 1)
        #expect(harness.store.failedCommits == 3)
        let user = try #require(await harness.user(a.id))
        #expect(user.state == .loggedIn)
        #expect(user.lastRefreshError == .internal)
        // The backoff grows with each failed attempt (the third waits 4 s, less up to 10 %).
        let retryAt = try #require(user.retryAt)
        #expect(retryAt >= harness.clock.now().adding(milliseconds: 3600))

        // Logging out revokes the stored session and the one the provider issued but that was never stored.
        _ = try await harness.registry.logout(userID: a.id)
        #expect(Set(harness.provider.revokedRefreshTokens) == ["refresh-1", "refresh-2"])
    }
}
