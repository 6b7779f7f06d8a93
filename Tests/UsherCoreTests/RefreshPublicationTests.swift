import Testing
import UsherProtocol
import UsherTestSupport

@testable import UsherCore

/// What a reader sees when it is told `token_refreshed`: reads are answered from the published view, not through the
/// registry, so the refresh must be over in the same publication that carries its tokens and its event.
@Suite("Refresh publication")
struct RefreshPublicationTests {
    @Test("the commit that stores a refresh publishes it as over", .timeLimit(.minutes(1)))
    func theRefreshIsOverWhenItsTokensArePublished() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        var log = EventLog(harness.registry)
        let now = harness.clock.now()
        let answer = TokenSet(
            accessToken: "access-2",
            issuedAt: now,
            expiresAt: now.adding(seconds: 3600),
            refreshToken: "refresh-2",
            refreshExpiresAt: nil
        )

        // The in-flight flag as a refresh sets it, and its answer committed as the refresh commits it. (The refresh
        // itself clears the flag afterwards, too late for a reader that acts on the event at once.)
        let during = try await harness.registry.commitWhileRefreshing(answer, of: a.id)
        #expect(during == .refreshing)

        let event = try #require(await log.next())
        #expect(event.name == .tokenRefreshed)
        let user = try #require(await harness.user(a.id))
        #expect(user.tokenState == .fresh)
    }
}

extension SessionRegistry {
    /// Marks `userID`'s refresh in flight, then commits `tokens` as the refresh's answer, as `performRefresh` does
    /// between the two; returns the token state the view showed while the refresh was in flight.
    fileprivate func commitWhileRefreshing(_ tokens: TokenSet, of userID: String) async throws -> TokenState? {
        let user = try #require(self.state[userID])
        let session = try #require(user.session)
        self.tokenStatus[userID, default: TokenStatus()].refreshing = true
        let during = self.view.listUsers().users.first { $0.id == userID }?.tokenState
        _ = try await self.commitRefresh(
            RefreshedSession(tokens: tokens, providerData: nil),
            of: userID,
            replacing: session,
            provider: user.provider
        )
        return during
    }
}
