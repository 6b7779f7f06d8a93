import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// A refresh the provider refuses for the daemon's own client configuration (`invalid_client`): the user stays logged
/// in, the provider is left alone for an hour (or until a reload), and an operator is told.
@Suite("Provider misconfigured")
struct ProviderMisconfiguredTests {
    static let hour: Int64 = 3600

    @Test(
        "invalid_client keeps the user logged in, backs off an hour, tells subscribers and logs an error",
        .timeLimit(.minutes(1))
    )
    func refusedClientBacksOffLong() async throws {
        // Tokens that live two hours, so the hour of backoff fits in their lifetime.
        let harness = try await Harness(accessLifetimeMilliseconds: 2 * Self.hour * 1000)
        let a = try await harness.login("a@example.com")
        var log = EventLog(harness.registry)
        harness.provider.script([.refuseClient], then: .succeed)

        harness.clock.advance(bySeconds: 60)
        let failedAt = harness.clock.now()
        await #expect(
            throws: ProviderError.misconfigured("the provider refused the client: invalid_client (bad secret)")
        ) {
            try await harness.registry.refresh(userID: a.id)
        }
        let event = try #require(await log.next())
        guard case .refreshFailed(a.id, .providerMisconfigured, let message, let retryAt?) = event.payload else {
            Issue.record("expected refresh_failed provider_misconfigured with retry_at, got \(event)")
            return
        }
        #expect(message.contains("invalid_client"))
        #expect(retryAt == failedAt.adding(seconds: Self.hour))
        let user = try #require(await harness.user(a.id))
        #expect(user.state == .loggedIn)
        #expect(user.active)
        #expect(user.tokenState == .retrying)
        #expect(user.retryAt == retryAt)
        #expect(user.nextRefreshAt == retryAt)
        #expect(user.lastRefreshError == .providerMisconfigured)
        let errors = harness.logs.all.filter { $0.level == .error }
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("client configuration") == true)
        #expect(errors.first?.metadata["user.id"] == a.id)
        #expect(errors.first?.metadata["reason"]?.contains("invalid_client") == true)

        // Until the hour is over, nothing asks the provider: requests fail at once, access_token hands out the
        // stored token while it is valid.
        await #expect(throws: ProviderError.self) {
            try await harness.registry.refresh(userID: a.id)
        }
        #expect(
            try await harness.registry.accessToken(userID: a.id, minValidSeconds: 3 * Self.hour).accessToken
                == "access-1"
        )
        #expect(harness.provider.refreshCallCount == 1)

        try await withRunningScheduler(harness.registry) {
            #expect(await waitUntilSleeping(harness.clock))
            harness.clock.advance(bySeconds: Self.hour - 1)
            #expect(await waitUntilSleeping(harness.clock))
            #expect(harness.provider.refreshCallCount == 1, "no attempt before the hour is over")
            harness.clock.advance(bySeconds: 1)
            let recovered = try #require(await log.next())
            #expect(recovered.name == .tokenRefreshed)
        }
        #expect(harness.provider.refreshCallCount == 2)
        let fresh = try #require(await harness.user(a.id))
        #expect(fresh.tokenState == .fresh)
        #expect(fresh.lastRefreshError == nil)
        #expect(fresh.retryAt == nil)
    }

    @Test("a configuration reload retries a refused refresh at once", .timeLimit(.minutes(1)))
    func reloadRetriesAtOnce() async throws {
        let harness = try await Harness(accessLifetimeMilliseconds: 2 * Self.hour * 1000)
        let a = try await harness.login("a@example.com")
        var log = EventLog(harness.registry)
        harness.provider.script([.refuseClient], then: .succeed)
        harness.clock.advance(bySeconds: 60)
        await #expect(throws: ProviderError.self) {
            try await harness.registry.refresh(userID: a.id)
        }
        #expect(await log.next()?.name == .refreshFailed)

        try await withRunningScheduler(harness.registry) {
            #expect(await waitUntilSleeping(harness.clock))
            // The operator fixed the secret and reloaded: no time passes, and the refresh happens.
            await harness.registry.reconfigure(
                providers: harness.providers,
                defaultProvider: harness.provider.name,
                configuration: harness.configuration
            )
            let recovered = try #require(await log.next())
            #expect(recovered.name == .tokenRefreshed)
        }
        #expect(harness.provider.refreshCallCount == 2)
        #expect(await harness.user(a.id)?.lastRefreshError == nil)
    }

    @Test("a reload leaves users alone whose refreshes failed for other reasons", .timeLimit(.minutes(1)))
    func reloadLeavesTransientFailuresAlone() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.provider.script([.failTransiently], then: .succeed)
        harness.clock.advance(bySeconds: 60)
        await #expect(throws: ProviderError.self) {
            try await harness.registry.refresh(userID: a.id)
        }
        let retryAt = try #require(await harness.user(a.id)?.retryAt)
        await harness.registry.reconfigure(
            providers: harness.providers,
            defaultProvider: harness.provider.name,
            configuration: harness.configuration
        )
        #expect(harness.registry.scheduler.deadline(for: a.id) == retryAt)
        #expect(await harness.user(a.id)?.retryAt == retryAt)
    }
}
