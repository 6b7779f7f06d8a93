import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// A provider that answers a refresh with a 4xx that is neither `invalid_grant` nor a refused client (an account
/// deleted at the provider: `HTTP 400 invalid_request`, "There is no 'user' for this token") is not an outage.
@Suite("A provider that refuses refreshes")
struct RefreshRefusalTests {
    @Test(
        "one refusal is provider_rejected and retried; the same refusal again logs the user out",
        .timeLimit(.minutes(1))
    )
    func theSameRefusalTwiceEndsTheSession() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        var log = EventLog(harness.registry)
        log.names = [a.id: "a"]
        harness.provider.script([.refuse, .refuse])

        await #expect(throws: ProviderError.self) { try await harness.registry.refresh(userID: a.id) }
        let refused = try #require(harness.registry.view.info(a.id))
        #expect(refused.state == .loggedIn)
        #expect(refused.lastRefreshError == .providerRejected)

        await #expect(throws: SessionError.userLoggedOut(a.id)) { try await harness.registry.refresh(userID: a.id) }
        #expect(harness.registry.view.info(a.id)?.state == .loggedOut)
        #expect(harness.provider.refreshCalls.count == 2)
        let events = await log.next(3)
        #expect(events.contains { $0.contains("user_logged_out a session_revoked") }, "\(events)")
    }

    @Test("a failure of another kind between two refusals starts the count again", .timeLimit(.minutes(1)))
    func anotherFailureInBetween() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.provider.script([.refuse, .failTransiently, .refuse])
        for _ in 0..<3 {
            await #expect(throws: ProviderError.self) { try await harness.registry.refresh(userID: a.id) }
        }
        #expect(harness.registry.view.info(a.id)?.state == .loggedIn)
        #expect(harness.registry.view.info(a.id)?.lastRefreshError == .providerRejected)
    }
}
