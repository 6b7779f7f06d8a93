import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// Keeping sessions alive: when tokens are refreshed, what failures do, and what late results may not do.
@Suite("Token lifecycle")
struct TokenLifecycleTests {
    private static func tokens(issuedAt: Timestamp, lifetimeSeconds: Int64) -> TokenSet {
        TokenSet(
            accessToken: "access",
            issuedAt: issuedAt,
            expiresAt: issuedAt.adding(seconds: lifetimeSeconds),
            refreshToken: "refresh",
            refreshExpiresAt: nil
        )
    }

    @Test(
        "refresh deadline is expires_at − margin − up to 10 % jitter, margin capped at half the lifetime",
        arguments: [
            // (lifetime s, refresh_margin ms, expected margin ms)
            (3600, 300_000, 300_000),
            (300, 300_000, 150_000),
            (60, 300_000, 30_000),
            (3600, 0, 0),
        ] as [(Int64, Int64, Int64)]
    )
    func refreshDeadline(lifetimeSeconds: Int64, marginMilliseconds: Int64, expectedMargin: Int64) {
        var seen = Set<Int64>()
        for sample in 0..<2000 {
            // Users log in at different times.
            let issuedAt = ManualClock().now().adding(milliseconds: Int64(sample) * 7919)
            let tokens = Self.tokens(issuedAt: issuedAt, lifetimeSeconds: lifetimeSeconds)
            let latest = tokens.expiresAt.adding(milliseconds: -expectedMargin)
            let earliest = latest.adding(milliseconds: -(expectedMargin / 10))
            let userID = User.id(provider: "scripted", subject: "user\(sample)")
            let deadline = TokenDeadlines(refreshMarginMilliseconds: marginMilliseconds).refreshDeadline(
                for: tokens,
                userID: userID
            )
            #expect(deadline >= earliest && deadline <= latest, "deadline \(deadline) not in [\(earliest), \(latest)]")
            seen.insert(deadline.millisecondsSinceEpoch - latest.millisecondsSinceEpoch)
            let again = TokenDeadlines(refreshMarginMilliseconds: marginMilliseconds).refreshDeadline(
                for: tokens,
                userID: userID
            )
            #expect(again == deadline, "the same token of the same user has the same deadline, across restarts too")
        }
        if expectedMargin > 0 {
            #expect(seen.count > 100, "jitter spreads users, so that they do not refresh in lockstep")
        }
    }

    @Test("backoff after transient failures: 1 s doubling to 5 min, less up to 10 % jitter")
    func backoff() {
        let expected: [Int64] = [
            1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000, 300_000,
        ]
        for (index, ceiling) in expected.enumerated() {
            let range = TokenDeadlines.backoffMilliseconds(failures: index + 1)
            #expect(range == (ceiling - ceiling / 10)...ceiling, "after \(index + 1) failures")
        }
        #expect(TokenDeadlines.backoffMilliseconds(failures: 10_000) == 270_000...300_000)
    }

    @Test("the scheduler refreshes before expiry without any request", .timeLimit(.minutes(1)))
    func scheduledRefresh() async throws {
        let harness = try await Harness()
        let loginTime = harness.clock.now()
        let a = try await harness.login("a@example.com")
        let expiry = try #require(a.accessTokenExpiresAt)
        #expect(expiry == loginTime.adding(seconds: 3600))
        let nextRefresh = try #require(await harness.user(a.id)?.nextRefreshAt)
        #expect(nextRefresh >= expiry.adding(seconds: -330) && nextRefresh <= expiry.adding(seconds: -300))
        #expect(harness.registry.scheduler.deadline(for: a.id) == nextRefresh)
        var log = EventLog(harness.registry)

        try await withRunningScheduler(harness.registry) {
            #expect(await waitUntilSleeping(harness.clock))
            // A millisecond before the deadline, nothing is refreshed.
            harness.clock.advance(
                byMilliseconds: nextRefresh.millisecondsSinceEpoch - loginTime.millisecondsSinceEpoch - 1
            )
            #expect(await waitUntilSleeping(harness.clock))
            #expect(harness.provider.refreshCallCount == 0)

            harness.clock.advance(byMilliseconds: 1)
            let event = try #require(await log.next())
            #expect(event.name == .tokenRefreshed)
            #expect(harness.provider.refreshCalls == [.init(refreshToken: "refresh-1", at: nextRefresh)])
        }
        let refreshed = try #require(await harness.user(a.id))
        #expect(refreshed.state == .loggedIn)
        #expect(refreshed.tokenState == .fresh)
        #expect(refreshed.accessTokenExpiresAt == nextRefresh.adding(seconds: 3600))
        let following = try #require(refreshed.nextRefreshAt)
        #expect(following > nextRefresh.adding(seconds: 3600 - 331))
        #expect(try await harness.registry.accessToken(userID: nil, minValidSeconds: 60).accessToken == "access-2")
        #expect(await harness.generation() == 1)
    }

    @Test("access_token refreshes first when the token would not stay valid for min_valid", .timeLimit(.minutes(1)))
    func accessTokenMinValid() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")

        // A token issued within the last second satisfies any min_valid: no refresh loop.
        harness.clock.advance(byMilliseconds: 999)
        let first = try await harness.registry.accessToken(userID: nil, minValidSeconds: 366 * 86_400)
        #expect(first.accessToken == "access-1")
        #expect(first.userID == a.id)
        #expect(first.tokenType == "Bearer")
        #expect(harness.provider.refreshCallCount == 0)

        // Ten minutes later 50 minutes are left: enough for 3000 s, not for 3001 s.
        harness.clock.advance(byMilliseconds: 600_000 - 999)
        let enough = try await harness.registry.accessToken(userID: a.id, minValidSeconds: 3000)
        #expect(enough.accessToken == "access-1")
        #expect(enough.expiresIn == 3000)
        #expect(harness.provider.refreshCallCount == 0)

        let refreshed = try await harness.registry.accessToken(userID: a.id, minValidSeconds: 3001)
        #expect(refreshed.accessToken == "access-2")
        #expect(refreshed.expiresIn == 3600)
        #expect(refreshed.expiresAt == harness.clock.now().adding(seconds: 3600))
        #expect(harness.provider.refreshCallCount == 1)

        let again = try await harness.registry.accessToken(userID: a.id, minValidSeconds: 366 * 86_400)
        #expect(again.accessToken == "access-2")
        #expect(harness.provider.refreshCallCount == 1)
    }

    @Test("concurrent access_token calls share one refresh", .timeLimit(.minutes(1)))
    func singleFlight() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.clock.advance(bySeconds: 3500)
        harness.provider.holdRefreshes()

        let tokens = try await withThrowingTaskGroup(of: String.self, returning: [String].self) { group in
            for _ in 0..<200 {
                group.addTask {
                    try await harness.registry.accessToken(userID: a.id, minValidSeconds: 300).accessToken
                }
            }
            #expect(await waitUntil("the refresh reaches the provider") { harness.provider.refreshCallCount > 0 })
            #expect(await harness.user(a.id)?.tokenState == .refreshing)
            try await Task.sleep(for: .milliseconds(20))
            harness.provider.releaseRefreshes()
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(tokens.count == 200)
        #expect(Set(tokens) == ["access-2"])
        #expect(harness.provider.refreshCallCount == 1)
        #expect(await harness.user(a.id)?.tokenState == .fresh)
    }

    @Test("a transient failure keeps the user logged in and retries with backoff", .timeLimit(.minutes(1)))
    func transientFailure() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        var log = EventLog(harness.registry)
        harness.provider.script([], then: .failTransiently)

        // 200 s before expiry, a refresh fails.
        harness.clock.advance(bySeconds: 3400)
        let failedAt = harness.clock.now()
        await #expect(throws: ProviderError.unavailable("the provider is down")) {
            try await harness.registry.refresh(userID: a.id)
        }
        let event = try #require(await log.next())
        guard case .refreshFailed(let userID, let code, _, let retryAt?) = event.payload else {
            Issue.record("expected refresh_failed with retry_at, got \(event)")
            return
        }
        #expect(userID == a.id)
        #expect(code == .providerUnavailable)
        #expect(retryAt >= failedAt.adding(milliseconds: 900) && retryAt <= failedAt.adding(milliseconds: 1000))
        #expect(event.generation == 1)
        let retrying = try #require(await harness.user(a.id))
        #expect(retrying.state == .loggedIn)
        #expect(retrying.active)
        #expect(retrying.tokenState == .retrying)
        #expect(retrying.retryAt == retryAt)
        #expect(retrying.nextRefreshAt == retryAt)
        #expect(retrying.lastRefreshError == .providerUnavailable)
        #expect(harness.registry.scheduler.deadline(for: a.id) == retryAt)

        // access_token asks for more than is left: the refresh fails again, the stored token is still handed out.
        let stored = try await harness.registry.accessToken(userID: nil, minValidSeconds: 600)
        #expect(stored.accessToken == "access-1")
        #expect(stored.expiresIn == 200)
        #expect(harness.provider.refreshCallCount == 2)
        let second = try #require(await log.next())
        guard case .refreshFailed(_, _, _, let secondRetry?) = second.payload else {
            Issue.record("expected refresh_failed with retry_at, got \(second)")
            return
        }
        // The caller's failed attempt leaves the background retry where it was (issue 42, item 16): asking during an
        // outage must not make recovery wait longer once the provider is back.
        #expect(secondRetry == retryAt)
        #expect(harness.registry.scheduler.deadline(for: a.id) == retryAt)
        #expect(await harness.user(a.id)?.retryAt == retryAt)

        // Once expired, there is no token to hand out; the user is still logged in.
        harness.clock.advance(bySeconds: 201)
        await #expect(throws: ProviderError.unavailable("the provider is down")) {
            try await harness.registry.accessToken(userID: nil, minValidSeconds: 0)
        }
        #expect(await harness.user(a.id)?.state == .loggedIn)
        #expect(await harness.user(a.id)?.tokenState == .retrying)
        #expect(await log.next().map(\.name) == .refreshFailed)

        // The provider is back: the scheduled retry (at most 4 s after the third failure) succeeds by itself.
        harness.provider.script([], then: .succeed)
        try await withRunningScheduler(harness.registry) {
            harness.clock.advance(bySeconds: 4)
            let recovered = try #require(await log.next())
            let expiresAt = harness.clock.now().adding(seconds: 3600)
            #expect(recovered.payload == .tokenRefreshed(userID: a.id, accessTokenExpiresAt: expiresAt))
        }
        #expect(harness.provider.refreshCallCount == 4)
        let fresh = try #require(await harness.user(a.id))
        #expect(fresh.tokenState == .fresh)
        #expect(fresh.retryAt == nil)
        #expect(fresh.lastRefreshError == nil)
        let nextRefresh = try #require(fresh.nextRefreshAt)
        #expect(nextRefresh > harness.clock.now().adding(seconds: 3000))
        #expect(try await harness.registry.accessToken(userID: nil, minValidSeconds: 60).accessToken == "access-2")
        #expect(await harness.generation() == 1)
    }

    @Test(
        "after a retry succeeds with a provider that does not rotate, the next refresh is a normal one",
        .timeLimit(.minutes(1))
    )
    func recoveryWithoutRotation() async throws {
        let harness = try await Harness()
        harness.provider.setRotatesRefreshTokens(false)
        let a = try await harness.login("a@example.com")
        var log = EventLog(harness.registry)
        harness.provider.script([.failTransiently])

        harness.clock.advance(bySeconds: 3400)
        await #expect(throws: ProviderError.unavailable("the provider is down")) {
            try await harness.registry.refresh(userID: a.id)
        }
        _ = await log.next()
        try await withRunningScheduler(harness.registry) {
            #expect(await waitUntilSleeping(harness.clock))
            harness.clock.advance(bySeconds: 1)
            let recovered = try #require(await log.next())
            #expect(recovered.name == .tokenRefreshed)
            #expect(await waitUntilSleeping(harness.clock))
        }
        #expect(harness.provider.refreshCallCount == 2, "one failed attempt, one successful retry")
        let user = try #require(await harness.user(a.id))
        #expect(user.tokenState == .fresh)
        let nextRefresh = try #require(user.nextRefreshAt)
        #expect(nextRefresh > harness.clock.now().adding(seconds: 3000))
        #expect(try await harness.storedTokens(a.id)?.refreshToken == "refresh-1", "the refresh token is kept")
    }

    @Test("a rejected refresh logs the user out and the active user falls back", .timeLimit(.minutes(1)))
    func permanentRejection() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.clock.advance(bySeconds: 60)
        let b = try await harness.login("b@example.com")
        var log = EventLog(harness.registry)
        log.names = [a.id: "a", b.id: "b"]
        harness.provider.script([], then: .reject)

        try await withRunningScheduler(harness.registry) {
            // a's refresh is due by t+3300 s, b's not before t+3330 s. When a's is rejected, b stays active.
            harness.clock.advance(bySeconds: 3240)
            #expect(await log.next(1) == ["3 user_logged_out a session_revoked"])
            harness.clock.advance(bySeconds: 60)
            #expect(await log.next(2) == ["4 user_logged_out b session_revoked", "4 active_user_changed b -> nil"])
        }
        #expect(harness.provider.refreshCallCount == 2)
        #expect(await harness.users().map(\.state) == [.loggedOut, .loggedOut])
        #expect(await harness.users().map(\.email) == ["a@example.com", "b@example.com"])
        #expect(try await harness.storedTokens(a.id) == nil)
        #expect(await harness.activeID() == nil)
        await #expect(throws: SessionError.userLoggedOut(b.id)) {
            try await harness.registry.accessToken(userID: b.id, minValidSeconds: 0)
        }
    }

    @Test("a rejected refresh of the active user hands over to the most recent other user", .timeLimit(.minutes(1)))
    func rejectionFallsBack() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        let c = try await harness.login("c@example.com")
        _ = try await harness.registry.switchUser(to: a.id, ifGeneration: nil)
        _ = try await harness.registry.switchUser(to: c.id, ifGeneration: nil)
        var log = EventLog(harness.registry)
        log.names = [a.id: "a", b.id: "b", c.id: "c"]
        harness.provider.script([.reject])
        harness.clock.advance(bySeconds: 10)

        await #expect(throws: SessionError.userLoggedOut(c.id)) {
            try await harness.registry.accessToken(userID: nil, minValidSeconds: 3600)
        }
        #expect(await log.next(2) == ["6 user_logged_out c session_revoked", "6 active_user_changed c -> a"])
        #expect(await harness.activeID() == a.id)
        #expect(await harness.user(c.id)?.state == .loggedOut)
        #expect(harness.provider.revokedRefreshTokens.isEmpty, "a rejected session needs no revocation")
    }

    @Test("the refresh token's own expiry logs the user out without calling the provider", .timeLimit(.minutes(1)))
    func refreshTokenExpiry() async throws {
        let harness = try await Harness(accessLifetimeMilliseconds: 3_600_000, refreshLifetimeMilliseconds: 1_800_000)
        let loginTime = harness.clock.now()
        let a = try await harness.login("a@example.com")
        #expect(a.refreshTokenExpiresAt == loginTime.adding(seconds: 1800))
        var log = EventLog(harness.registry)
        log.names = [a.id: "a"]

        try await withRunningScheduler(harness.registry) {
            #expect(await waitUntilSleeping(harness.clock))
            harness.clock.advance(bySeconds: 1799)
            #expect(await waitUntilSleeping(harness.clock))
            #expect(await harness.user(a.id)?.state == .loggedIn)
            harness.clock.advance(bySeconds: 1)
            #expect(
                await log.next(2) == ["2 user_logged_out a refresh_token_expired", "2 active_user_changed a -> nil"]
            )
        }
        #expect(harness.provider.refreshCallCount == 0)
        #expect(harness.provider.revokedRefreshTokens.isEmpty)
        #expect(await harness.user(a.id)?.state == .loggedOut)
        await #expect(throws: SessionError.userLoggedOut(a.id)) {
            try await harness.registry.accessToken(userID: a.id, minValidSeconds: 0)
        }
    }

    @Test("a refresh that completes after logout never brings the user back", .timeLimit(.minutes(1)))
    func lateRefreshAfterLogout() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.provider.holdRefreshes()

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await #expect(throws: SessionError.userLoggedOut(a.id)) {
                    try await harness.registry.refresh(userID: a.id)
                }
            }
            #expect(await waitUntil("the refresh reaches the provider") { harness.provider.refreshCallCount == 1 })
            _ = try await harness.registry.logout(userID: a.id)
            let generation = await harness.generation()
            harness.provider.releaseRefreshes()
            try await group.waitForAll()
            #expect(await harness.generation() == generation)
        }
        let user = try #require(await harness.user(a.id))
        #expect(user.state == .loggedOut)
        #expect(user.tokenState == .none)
        #expect(try await harness.storedTokens(a.id) == nil)
        #expect(harness.provider.revokedRefreshTokens == ["refresh-1", "refresh-2"], "the late tokens are revoked")
        #expect(harness.registry.scheduler.deadline(for: a.id) == nil)
    }

    @Test("a refresh that completes after a new login never overwrites the newer tokens", .timeLimit(.minutes(1)))
    func lateRefreshAfterRelogin() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.provider.holdRefreshes()

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                _ = try? await harness.registry.refresh(userID: a.id)
            }
            #expect(await waitUntil("the refresh reaches the provider") { harness.provider.refreshCallCount == 1 })
            _ = try await harness.registry.logout(userID: a.id)
            try await harness.login("a@example.com")
            harness.provider.releaseRefreshes()
            try await group.waitForAll()
        }
        #expect(harness.provider.lastIssued == 3, "the late refresh did issue access-3")
        #expect(try await harness.storedTokens(a.id)?.accessToken == "access-2")
        #expect(try await harness.storedTokens(a.id)?.refreshToken == "refresh-2")
        #expect(try await harness.registry.accessToken(userID: a.id, minValidSeconds: 60).accessToken == "access-2")
        #expect(harness.provider.revokedRefreshTokens == ["refresh-1", "refresh-3"])
        #expect(await harness.user(a.id)?.tokenState == .fresh)
    }

    @Test("a restart after the refresh token expired comes up logged out", .timeLimit(.minutes(1)))
    func restartAfterExpiry() async throws {
        let harness = try await Harness(refreshLifetimeMilliseconds: 86_400_000)
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        harness.provider.setLifetimes(accessMilliseconds: 3_600_000, refreshMilliseconds: 3 * 86_400_000)
        harness.clock.advance(bySeconds: 60)
        let c = try await harness.login("c@example.com")
        let generation = await harness.generation()

        // The daemon is down for two days.
        harness.clock.advance(bySeconds: 2 * 86_400)
        let restarted = harness.restartedRegistry()
        var log = EventLog(restarted)
        log.names = [a.id: "a", b.id: "b", c.id: "c"]
        try await restarted.load()

        let events = await log.next(2)
        #expect(events.count == 2)
        #expect(
            Set(events) == [
                "\(generation + 1) user_logged_out a refresh_token_expired",
                "\(generation + 1) user_logged_out b refresh_token_expired",
            ]
        )
        let users = await restarted.listUsers().users
        #expect(users.map(\.state) == [.loggedOut, .loggedOut, .loggedIn])
        #expect(await restarted.currentUser().user?.id == c.id)
        #expect(harness.provider.refreshCallCount == 0)
        await #expect(throws: SessionError.userLoggedOut(a.id)) {
            try await restarted.accessToken(userID: a.id, minValidSeconds: 0)
        }
        // c's token expired while the daemon was down: its refresh is due at once.
        #expect(try #require(restarted.scheduler.earliestDeadline()) <= harness.clock.now().adding(seconds: 30))
    }

    @Test("a rotated refresh token is stored durably", .timeLimit(.minutes(1)))
    func rotationIsDurable() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.clock.advance(bySeconds: 3400)
        _ = try await harness.registry.refresh(userID: a.id)
        #expect(harness.provider.refreshCalls.map(\.refreshToken) == ["refresh-1"])

        let stored = try #require(try await harness.storedTokens(a.id))
        #expect(stored.refreshToken == "refresh-2")
        #expect(stored.accessToken == "access-2")

        let restarted = harness.restartedRegistry()
        try await restarted.load()
        #expect(try await restarted.accessToken(userID: a.id, minValidSeconds: 60).accessToken == "access-2")
        harness.clock.advance(bySeconds: 3400)
        _ = try await restarted.refresh(userID: a.id)
        #expect(harness.provider.refreshCalls.map(\.refreshToken) == ["refresh-1", "refresh-2"])
    }
}
