import Testing
import UsherCore
import UsherProtocol
import UsherStore

/// The registry's lifecycle: nothing changes before it has loaded, and once the daemon is stopping it takes no new
/// change and starts no refresh, while reads still answer.
@Suite
struct LifecycleTests {
    @Test func nothingChangesBeforeTheStateIsLoaded() async throws {
        let harness = try await Harness()
        let unloaded = harness.restartedRegistry()
        #expect(await unloaded.lifecycle == .loading)
        await #expect(throws: SessionError.notReady) {
            _ = try await unloaded.login(provider: nil, credentials: Harness.credentials("a@example.com"))
        }
        try await unloaded.load()
        #expect(await unloaded.lifecycle == .running)
        _ = try await unloaded.login(provider: nil, credentials: Harness.credentials("a@example.com"))
    }

    @Test func aStoppingRegistryTakesNoNewChangesButStillAnswersReads() async throws {
        let harness = try await Harness()
        let joe = try await harness.login("joe@example.com")
        await harness.registry.announceStopping()
        #expect(await harness.registry.lifecycle == .stopping)
        await #expect(throws: SessionError.stopping) { try await harness.login("ann@example.com") }
        await #expect(throws: SessionError.stopping) { _ = try await harness.registry.refresh(userID: nil) }
        // Reads, and a token that needs no refresh, still answer.
        #expect(await harness.activeID() == joe.id)
        let token = try await harness.registry.accessToken(userID: nil, minValidSeconds: 60)
        #expect(token.userID == joe.id)
        // Nothing was written after the stop began.
        #expect(try await harness.database.loadSessions().users.map(\.id) == [joe.id])
    }
}
