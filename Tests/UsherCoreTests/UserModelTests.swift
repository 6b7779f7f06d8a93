import Testing
import UsherCore
import UsherProtocol

/// The rules of who is on the device, in which state, and who is active.
@Suite("User model")
struct UserModelTests {
    @Test("login adds the user, logged in and active at once", .timeLimit(.minutes(1)))
    func loginAddsActiveUser() async throws {
        let harness = try await Harness()
        #expect(await harness.registry.currentUser().user == nil)
        #expect(await harness.users().isEmpty)

        let result = try await harness.registry.login(
            provider: nil,
            credentials: Harness.credentials("a@example.com")
        )

        #expect(result.generation == 1)
        #expect(result.user.state == .loggedIn)
        #expect(result.user.active)
        #expect(result.user.email == "a@example.com")
        #expect(result.user.provider == "scripted")
        let listed = await harness.users()
        #expect(listed.map(\.id) == [result.user.id])
        #expect(listed.first?.state == .loggedIn)
        #expect(listed.first?.active == true)
        #expect(await harness.activeID() == result.user.id)
    }

    @Test("wrong credentials add nobody and change nothing", .timeLimit(.minutes(1)))
    func wrongCredentials() async throws {
        let harness = try await Harness()
        try await harness.login("a@example.com")
        await #expect(throws: ProviderError.invalidCredentials("wrong email or password")) {
            try await harness.registry.login(
                provider: nil,
                credentials: Harness.credentials("b@example.com", password: "wrong")
            )
        }
        #expect(await harness.users().count == 1)
        #expect(await harness.generation() == 1)
        await #expect(throws: SessionError.providerNotFound("nope")) {
            try await harness.login("b@example.com", provider: "nope")
        }
    }

    @Test("logging in again as a known user keeps its id and makes it active", .timeLimit(.minutes(1)))
    func reloginKeepsID() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        _ = try await harness.registry.logout(userID: a.id)
        #expect(await harness.user(a.id)?.state == .loggedOut)

        let again = try await harness.login("a@example.com")
        #expect(again.id == a.id)
        #expect(again.state == .loggedIn)
        #expect(again.active)
        #expect(await harness.activeID() == a.id)
        #expect(await harness.users().map(\.id) == [a.id, b.id])

        _ = try await harness.registry.removeUser(a.id)
        #expect(await harness.users().map(\.id) == [b.id])
        let afterRemoval = try await harness.login("a@example.com")
        #expect(afterRemoval.id == a.id)
        #expect(afterRemoval.active)
        #expect(await harness.activeID() == a.id)
    }

    @Test("anonymous login reuses the provider's logged-in anonymous user, else creates one", .timeLimit(.minutes(1)))
    func anonymousReuse() async throws {
        let harness = try await Harness(providerNames: ["scripted", "other"])
        let anonymous = try await harness.loginAnonymously()
        #expect(anonymous.kind == CredentialType.anonymous)
        #expect(anonymous.email == nil)
        let b = try await harness.login("b@example.com")
        #expect(await harness.activeID() == b.id)
        let authentications = harness.provider.authenticationCount

        let again = try await harness.loginAnonymously()
        #expect(again.id == anonymous.id)
        #expect(again.active)
        #expect(await harness.activeID() == anonymous.id)
        #expect(harness.provider.authenticationCount == authentications, "no second provider session is opened")
        #expect(await harness.users().map(\.id) == [anonymous.id, b.id])

        // Logging in anonymously again while it is active changes nothing.
        let generation = await harness.generation()
        #expect(try await harness.loginAnonymously().id == anonymous.id)
        #expect(await harness.generation() == generation)

        // Another provider's anonymous login is another user.
        let other = try await harness.loginAnonymously(provider: "other")
        #expect(other.id != anonymous.id)
        #expect(other.provider == "other")
        #expect(try await harness.loginAnonymously().id == anonymous.id)

        // Once the anonymous user logged out (and so was removed), anonymous login creates a new user.
        _ = try await harness.registry.logout(userID: anonymous.id)
        let fresh = try await harness.loginAnonymously()
        #expect(fresh.id != anonymous.id)
        #expect(fresh.active)
        #expect(await harness.users().map(\.id) == [b.id, other.id, fresh.id])
    }

    @Test("current_user is the active user, and nil only when nobody is logged in", .timeLimit(.minutes(1)))
    func currentUser() async throws {
        let harness = try await Harness()
        await expectConsistentActiveUser(harness.registry)
        let a = try await harness.login("a@example.com")
        await expectConsistentActiveUser(harness.registry)
        let b = try await harness.login("b@example.com")
        #expect(await harness.activeID() == b.id)
        await expectConsistentActiveUser(harness.registry)
        _ = try await harness.registry.logout(userID: nil)
        #expect(await harness.activeID() == a.id)
        await expectConsistentActiveUser(harness.registry)
        _ = try await harness.registry.logout(userID: nil)
        #expect(await harness.registry.currentUser().user == nil)
        #expect(await harness.users().count == 2, "both stay on the device, logged out")
        await expectConsistentActiveUser(harness.registry)
        await #expect(throws: SessionError.noActiveUser) { try await harness.registry.logout(userID: nil) }
    }

    @Test("switch_user only to logged-in users", .timeLimit(.minutes(1)))
    func switchUser() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        let c = try await harness.login("c@example.com")
        _ = try await harness.registry.logout(userID: a.id)
        let generation = await harness.generation()

        await #expect(throws: SessionError.userLoggedOut(a.id)) {
            try await harness.registry.switchUser(to: a.id, ifGeneration: nil)
        }
        await #expect(throws: SessionError.userNotFound("u_nobody")) {
            try await harness.registry.switchUser(to: "u_nobody", ifGeneration: nil)
        }
        #expect(await harness.activeID() == c.id)
        #expect(await harness.generation() == generation)

        let same = try await harness.registry.switchUser(to: c.id, ifGeneration: nil)
        #expect(same.user.active)
        #expect(same.generation == generation, "switching to the active user is no change")

        let switched = try await harness.registry.switchUser(to: b.id, ifGeneration: nil)
        #expect(switched.user.id == b.id)
        #expect(switched.user.active)
        #expect(switched.generation == generation + 1)
        #expect(await harness.activeID() == b.id)
        await expectConsistentActiveUser(harness.registry)
    }

    @Test("logout keeps the user logged out with its profile and discards its tokens", .timeLimit(.minutes(1)))
    func logoutKeepsProfile() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        let bTokens = try #require(try await harness.storedTokens(b.id))

        let result = try await harness.registry.logout(userID: nil)
        #expect(result.user.id == b.id, "logout defaults to the active user")
        #expect(result.user.state == .loggedOut)
        #expect(result.user.email == "b@example.com")
        #expect(result.user.active == false)
        #expect(result.user.tokenState == .none)
        #expect(result.user.accessTokenExpiresAt == nil)
        #expect(result.revoked)
        #expect(harness.provider.revokedRefreshTokens == [bTokens.refreshToken])

        let listed = try #require(await harness.user(b.id))
        #expect(listed.state == .loggedOut)
        #expect(listed.email == "b@example.com")
        #expect(listed.refreshTokenExpiresAt == nil)
        #expect(try await harness.storedTokens(b.id) == nil, "no token is kept on disk")
        await #expect(throws: SessionError.userLoggedOut(b.id)) {
            try await harness.registry.accessToken(userID: b.id, minValidSeconds: 60)
        }
        #expect(await harness.activeID() == a.id)
    }

    @Test("logout of an anonymous user removes it", .timeLimit(.minutes(1)))
    func logoutAnonymousRemoves() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let anonymous = try await harness.loginAnonymously()

        let result = try await harness.registry.logout(userID: nil)
        #expect(result.user.id == anonymous.id)
        #expect(result.user.state == .removed)
        #expect(result.user.active == false)
        #expect(await harness.users().map(\.id) == [a.id])
        #expect(try await harness.database.loadSessions().users.map(\.id) == [a.id])
        #expect(await harness.activeID() == a.id)
    }

    @Test("logging out a logged-out user succeeds and changes nothing", .timeLimit(.minutes(1)))
    func logoutTwice() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        _ = try await harness.registry.logout(userID: a.id)
        let generation = await harness.generation()
        let revocations = harness.provider.revokedRefreshTokens.count

        let result = try await harness.registry.logout(userID: a.id)
        #expect(result.user.state == .loggedOut)
        #expect(result.generation == generation)
        #expect(result.revoked == false)
        #expect(await harness.generation() == generation)
        #expect(harness.provider.revokedRefreshTokens.count == revocations)
        #expect(await harness.activeID() == b.id)
    }

    @Test("remove_user deletes the user", .timeLimit(.minutes(1)))
    func removeUser() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")

        let result = try await harness.registry.removeUser(b.id)
        #expect(result.userID == b.id)
        #expect(await harness.users().map(\.id) == [a.id])
        #expect(try await harness.database.loadSessions().users.map(\.id) == [a.id])
        #expect(harness.provider.revokedRefreshTokens.count == 1, "its session is revoked")
        await #expect(throws: SessionError.userNotFound(b.id)) { try await harness.registry.removeUser(b.id) }
        await #expect(throws: SessionError.userNotFound(b.id)) {
            try await harness.registry.accessToken(userID: b.id, minValidSeconds: 0)
        }

        // A logged-out user can be removed too.
        _ = try await harness.registry.logout(userID: a.id)
        _ = try await harness.registry.removeUser(a.id)
        #expect(await harness.users().isEmpty)
    }

    @Test("the most recently active logged-in user takes over from an active user who leaves", .timeLimit(.minutes(1)))
    func fallbackByRecency() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        let c = try await harness.login("c@example.com")
        let d = try await harness.login("d@example.com")
        // Recency now differs from the order added: a, then b, then d, then c.
        _ = try await harness.registry.switchUser(to: c.id, ifGeneration: nil)
        _ = try await harness.registry.switchUser(to: b.id, ifGeneration: nil)
        _ = try await harness.registry.switchUser(to: a.id, ifGeneration: nil)

        _ = try await harness.registry.logout(userID: nil)
        #expect(await harness.activeID() == b.id, "b was active just before a")
        _ = try await harness.registry.removeUser(b.id)
        #expect(await harness.activeID() == c.id, "c was active before b, d was only active before c")
        _ = try await harness.registry.logout(userID: c.id)
        #expect(await harness.activeID() == d.id)
        await expectConsistentActiveUser(harness.registry)
        _ = try await harness.registry.logout(userID: nil)
        #expect(await harness.activeID() == nil)
        await expectConsistentActiveUser(harness.registry)
    }

    @Test("after a, b, c log in and a becomes active again, a's logout hands over to c", .timeLimit(.minutes(1)))
    func fallbackSkipsOlderUsers() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        let c = try await harness.login("c@example.com")
        _ = try await harness.registry.switchUser(to: a.id, ifGeneration: nil)

        _ = try await harness.registry.logout(userID: a.id)
        #expect(await harness.activeID() == c.id)
        _ = try await harness.registry.logout(userID: c.id)
        #expect(await harness.activeID() == b.id)
    }

    @Test("logging out or removing an inactive user never changes the active user", .timeLimit(.minutes(1)))
    func inactiveLeavesActiveAlone() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        let c = try await harness.login("c@example.com")
        _ = try await harness.registry.switchUser(to: b.id, ifGeneration: nil)

        _ = try await harness.registry.logout(userID: c.id)
        #expect(await harness.activeID() == b.id)
        _ = try await harness.registry.removeUser(a.id)
        #expect(await harness.activeID() == b.id)
        _ = try await harness.registry.removeUser(c.id)
        #expect(await harness.activeID() == b.id)
        await expectConsistentActiveUser(harness.registry)
    }

    @Test("list_users is in the order users were added; a re-added user goes last", .timeLimit(.minutes(1)))
    func listOrder() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        let c = try await harness.login("c@example.com")
        #expect(await harness.users().map(\.id) == [a.id, b.id, c.id])

        // Logging out and in again, or switching, keeps a user's place.
        _ = try await harness.registry.logout(userID: a.id)
        try await harness.login("a@example.com")
        _ = try await harness.registry.switchUser(to: b.id, ifGeneration: nil)
        #expect(await harness.users().map(\.id) == [a.id, b.id, c.id])

        _ = try await harness.registry.removeUser(a.id)
        try await harness.login("a@example.com")
        #expect(await harness.users().map(\.id) == [b.id, c.id, a.id])
    }

    @Test("the generation moves by one per change, and not for no-ops or refreshes", .timeLimit(.minutes(1)))
    func generation() async throws {
        let harness = try await Harness()
        #expect(await harness.generation() == 0)
        let a = try await harness.login("a@example.com")
        #expect(await harness.generation() == 1)
        let b = try await harness.login("b@example.com")
        #expect(await harness.generation() == 2, "adding b and making it active is one change")
        _ = try await harness.registry.switchUser(to: a.id, ifGeneration: nil)
        #expect(await harness.generation() == 3)
        _ = try await harness.registry.switchUser(to: a.id, ifGeneration: nil)
        #expect(await harness.generation() == 3, "switching to the active user is no change")
        try await harness.login("a@example.com")
        #expect(await harness.generation() == 3, "logging in again as the active user is no change")
        _ = try await harness.registry.logout(userID: nil)
        #expect(await harness.generation() == 4, "a logout that moves the active user is one change")
        #expect(await harness.activeID() == b.id)
        _ = try await harness.registry.logout(userID: a.id)
        #expect(await harness.generation() == 4, "logging out a logged-out user is no change")

        let refreshed = try await harness.registry.refresh(userID: b.id)
        #expect(refreshed.userID == b.id)
        #expect(harness.provider.refreshCallCount == 1)
        #expect(await harness.generation() == 4, "a token refresh is no change")

        _ = try await harness.registry.removeUser(a.id)
        #expect(await harness.generation() == 5)
        #expect(await harness.registry.listUsers().generation == 5)
        #expect(await harness.registry.currentUser().generation == 5)
    }

    @Test("if_generation that does not match is a conflict and changes nothing", .timeLimit(.minutes(1)))
    func ifGeneration() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        let generation = await harness.generation()

        await #expect(throws: SessionError.conflict(expected: generation - 1, actual: generation)) {
            try await harness.registry.switchUser(to: a.id, ifGeneration: generation - 1)
        }
        #expect(await harness.activeID() == b.id)
        #expect(await harness.generation() == generation)

        let switched = try await harness.registry.switchUser(to: a.id, ifGeneration: generation)
        #expect(switched.generation == generation + 1)
        #expect(await harness.activeID() == a.id)
    }

    @Test("the state survives a restart", .timeLimit(.minutes(1)))
    func restart() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        let c = try await harness.login("c@example.com")
        try await harness.loginAnonymously()
        _ = try await harness.registry.switchUser(to: b.id, ifGeneration: nil)
        _ = try await harness.registry.switchUser(to: a.id, ifGeneration: nil)
        _ = try await harness.registry.logout(userID: c.id)
        let before = await harness.registry.listUsers()

        let restarted = harness.restartedRegistry()
        try await restarted.load()

        let after = await restarted.listUsers()
        #expect(after.generation == before.generation)
        #expect(after.users.map(\.id) == before.users.map(\.id))
        #expect(after.users.map(\.state) == before.users.map(\.state))
        #expect(after.users.map(\.active) == before.users.map(\.active))
        #expect(after.users.map(\.email) == before.users.map(\.email))
        #expect(after.users.map(\.accessTokenExpiresAt) == before.users.map(\.accessTokenExpiresAt))
        #expect(after.users.map(\.nextRefreshAt) == before.users.map(\.nextRefreshAt), "a restart is invisible")
        #expect(await restarted.currentUser().user?.id == a.id)
        #expect(
            try await restarted.accessToken(userID: a.id, minValidSeconds: 60).accessToken
                == harness.registry.accessToken(userID: a.id, minValidSeconds: 60).accessToken
        )

        // Recency survives too: b was active just before a.
        _ = try await restarted.logout(userID: nil)
        #expect(await restarted.currentUser().user?.id == b.id)
        #expect(await restarted.currentGeneration == before.generation + 1)
    }
}
