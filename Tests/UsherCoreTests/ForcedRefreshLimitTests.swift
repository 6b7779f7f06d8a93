import Testing
import UsherCore
import UsherProtocol

/// `refresh` on demand is bounded as `access_token` with a large `min_valid` is: a peer looping `refresh` must not make
/// the daemon rotate the refresh token and commit to disk once per request.
@Suite("Forced refreshes", .timeLimit(.minutes(1)))
struct ForcedRefreshLimitTests {
    @Test("a refresh less than a second after the last one answers with its token, without asking the provider")
    func refreshWithinASecondSharesTheLastOne() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.clock.advance(bySeconds: 60)
        let first = try await harness.registry.refresh(userID: a.id)
        #expect(harness.provider.refreshCallCount == 1)
        #expect(first.accessTokenExpiresAt == harness.clock.now().adding(seconds: 3600))

        for _ in 0..<200 {
            #expect(try await harness.registry.refresh(userID: a.id) == first)
        }
        harness.clock.advance(byMilliseconds: 999)
        #expect(try await harness.registry.refresh(userID: a.id) == first)
        #expect(harness.provider.refreshCallCount == 1, "one provider call for 202 refreshes within a second")
        #expect(try await harness.storedTokens(a.id)?.refreshToken == "refresh-2", "rotated once, stored once")

        // A second after the refresh, the next one asks the provider again.
        harness.clock.advance(byMilliseconds: 1)
        let second = try await harness.registry.refresh(userID: a.id)
        #expect(harness.provider.refreshCallCount == 2)
        #expect(second.accessTokenExpiresAt == harness.clock.now().adding(seconds: 3600))
        #expect(try await harness.registry.accessToken(userID: a.id, minValidSeconds: 0).accessToken == "access-3")
    }

    @Test("the bound follows any refresh: one the scheduler or access_token made counts too")
    func accessTokenRefreshCounts() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.clock.advance(bySeconds: 60)
        let token = try await harness.registry.accessToken(userID: a.id, minValidSeconds: 366 * 86_400)
        #expect(token.accessToken == "access-2")
        #expect(harness.provider.refreshCallCount == 1)
        let refreshed = try await harness.registry.refresh(userID: a.id)
        #expect(refreshed.accessTokenExpiresAt == token.expiresAt)
        #expect(harness.provider.refreshCallCount == 1)
    }

    @Test("the bound is per user, and a login's fresh token is refreshed on request")
    func perUser() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        // Right after a login, an explicit refresh still goes to the provider: only refreshes are bounded.
        _ = try await harness.registry.refresh(userID: a.id)
        #expect(harness.provider.refreshCallCount == 1)
        _ = try await harness.registry.refresh(userID: a.id)
        #expect(harness.provider.refreshCallCount == 1)
        _ = try await harness.registry.refresh(userID: b.id)
        #expect(harness.provider.refreshCallCount == 2, "a's recent refresh does not hold b's back")
    }
}
