import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// What subscribers are told, and when.
@Suite("Events")
struct EventTests {
    @Test("every change is announced once, with its generation, in order; no-ops are not", .timeLimit(.minutes(1)))
    func changesAreAnnounced() async throws {
        let harness = try await Harness()
        var log = EventLog(harness.registry)

        let a = try await harness.login("a@example.com")
        log.names[a.id] = "a"
        #expect(await log.next(2) == ["1 user_logged_in a", "1 active_user_changed nil -> a"])

        let b = try await harness.login("b@example.com")
        log.names[b.id] = "b"
        #expect(await log.next(2) == ["2 user_logged_in b", "2 active_user_changed a -> b"])

        // Logging out an inactive user does not move the active user.
        _ = try await harness.registry.logout(userID: a.id)
        #expect(await log.next(1) == ["3 user_logged_out a requested"])

        // No-ops: logging out a logged-out user, switching to the active user, logging in as the active user.
        _ = try await harness.registry.logout(userID: a.id)
        _ = try await harness.registry.switchUser(to: b.id, ifGeneration: nil)
        try await harness.login("b@example.com")

        let anonymous = try await harness.loginAnonymously()
        log.names[anonymous.id] = "anon"
        #expect(await log.next(2) == ["4 user_logged_in anon", "4 active_user_changed b -> anon"])

        let logout = try await harness.registry.logout(userID: nil)
        #expect(logout.generation == 5)
        #expect(await log.next(2) == ["5 user_removed anon", "5 active_user_changed anon -> b"])

        try await harness.login("a@example.com")
        #expect(await log.next(2) == ["6 user_logged_in a", "6 active_user_changed b -> a"])

        let switched = try await harness.registry.switchUser(to: b.id, ifGeneration: nil)
        #expect(switched.generation == 7)
        #expect(await log.next(1) == ["7 active_user_changed a -> b"])

        let removed = try await harness.registry.removeUser(b.id)
        #expect(removed.generation == 8)
        #expect(await log.next(2) == ["8 user_removed b", "8 active_user_changed b -> a"])

        _ = try await harness.registry.logout(userID: nil)
        #expect(await log.next(2) == ["9 user_logged_out a requested", "9 active_user_changed a -> nil"])

        _ = try await harness.registry.removeUser(a.id)
        #expect(await log.next(1) == ["10 user_removed a"])
    }

    @Test("user_logged_in carries the user as it is at that generation", .timeLimit(.minutes(1)))
    func loggedInPayload() async throws {
        let harness = try await Harness()
        var log = EventLog(harness.registry)
        let a = try await harness.login("a@example.com")

        let event = try #require(await log.next())
        guard case .userLoggedIn(let user) = event.payload else {
            Issue.record("expected user_logged_in, got \(event)")
            return
        }
        #expect(user.id == a.id)
        #expect(user.email == "a@example.com")
        #expect(user.state == .loggedIn)
        #expect(user.active, "the user is active from the generation it logged in at")
        #expect(user.lastActiveAt == harness.clock.now())
        #expect(user.accessTokenExpiresAt == a.accessTokenExpiresAt)
        #expect(user.tokenState == .fresh)
        #expect(user.nextRefreshAt != nil)
        #expect(user == a, "the event and the login's answer describe the same user")
    }

    @Test("a token refresh is announced at the current generation", .timeLimit(.minutes(1)))
    func refreshAnnounced() async throws {
        let harness = try await Harness()
        var log = EventLog(harness.registry)
        let a = try await harness.login("a@example.com")
        log.names[a.id] = "a"
        _ = await log.next(2)

        harness.clock.advance(bySeconds: 60)
        let refreshed = try await harness.registry.refresh(userID: nil)
        let event = try #require(await log.next())
        #expect(log.summary(event) == "1 token_refreshed a")
        #expect(event.payload == .tokenRefreshed(userID: a.id, accessTokenExpiresAt: refreshed.accessTokenExpiresAt))
        #expect(refreshed.accessTokenExpiresAt == harness.clock.now().adding(seconds: 3600))
    }
}
