import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// Narrowed tokens in the registry: kept per user and narrowing, single flight, refreshed on the timer queue while
/// programs use them, and dropped with the session they were made from.
@Suite("Narrowed tokens")
struct NarrowedTokenTests {
    static let media = TokenNarrowing(
        TokenAudience(audience: "https://media.example", scopes: ["read"]),
        party: "player"
    )

    @Test("a narrowed token is made once, for concurrent callers too, and handed out while fresh")
    func singleFlight() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        harness.provider.holdNarrowings()
        async let first = harness.registry.narrowedAccessToken(userID: nil, minValidSeconds: 60, narrowing: Self.media)
        async let second = harness.registry.narrowedAccessToken(userID: nil, minValidSeconds: 60, narrowing: Self.media)
        #expect(await waitUntil("the provider is asked") { harness.provider.narrowings.count == 1 })
        harness.provider.releaseNarrowings()
        let (one, two) = try await (first, second)
        #expect(one.accessToken == "narrowed-1" && two.accessToken == "narrowed-1")
        #expect(one.audience == "https://media.example" && one.scopes == ["read"] && one.userID == a.id)
        #expect(harness.provider.narrowings == [Self.media])

        // Asked again: the token held, without the provider; another program's narrowing is a token of its own.
        let again = try await harness.registry.narrowedAccessToken(
            userID: nil,
            minValidSeconds: 60,
            narrowing: Self.media
        )
        #expect(again.accessToken == "narrowed-1")
        var other = Self.media
        other.party = "reporter"
        let reporters = try await harness.registry.narrowedAccessToken(
            userID: nil,
            minValidSeconds: 60,
            narrowing: other
        )
        #expect(reporters.accessToken == "narrowed-2")
        #expect(harness.registry.narrowed.count == 2)
        // Never longer than the session's own token.
        #expect(one.expiresAt <= (try #require(a.accessTokenExpiresAt)))
    }

    @Test(
        "the timer queue refreshes a narrowed token a program uses, and drops one nobody asked for",
        .timeLimit(.minutes(1))
    )
    func refreshedWhileUsed() async throws {
        let harness = try await Harness(refreshMarginMilliseconds: 300_000)
        let a = try await harness.login("a@example.com")
        let token = try await harness.registry.narrowedAccessToken(
            userID: nil,
            minValidSeconds: 60,
            narrowing: Self.media
        )
        let key = NarrowedTokenCache.Key(userID: a.id, narrowing: Self.media)
        try await withRunningScheduler(harness.registry) {
            #expect(await waitUntilSleeping(harness.clock))
            // Its deadline is refresh_margin before it expires: the session's own comes a little earlier (jitter), and
            // refreshes the session; the narrowed token is then made again from the new session.
            harness.clock.advance(bySeconds: 3600 - 300)
            #expect(await waitUntil("the narrowed token is refreshed") { harness.provider.narrowings.count == 2 })
            #expect(await waitUntilSleeping(harness.clock))
            let refreshed = try #require(harness.registry.narrowed.current(key))
            #expect(refreshed.accessToken == "narrowed-2")
            #expect(refreshed.expiresAt > token.expiresAt)
            // Nobody asked for the new one: at its deadline it is dropped, not refreshed.
            harness.clock.advance(bySeconds: 3600)
            #expect(await waitUntil("the unused narrowed token is dropped") { harness.registry.narrowed.count == 0 })
            #expect(harness.provider.narrowings.count == 2)
        }
    }

    @Test("logging out, switching away and being removed drop a user's narrowed tokens")
    func droppedWithTheSession() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        _ = try await harness.registry.narrowedAccessToken(userID: nil, minValidSeconds: 60, narrowing: Self.media)
        #expect(harness.registry.narrowed.count == 1)
        // Another user logs in and becomes the active one: a is switched away from.
        let b = try await harness.login("b@example.com")
        #expect(harness.registry.narrowed.count == 0)
        _ = try await harness.registry.narrowedAccessToken(userID: nil, minValidSeconds: 60, narrowing: Self.media)
        _ = try await harness.registry.narrowedAccessToken(userID: a.id, minValidSeconds: 60, narrowing: Self.media)
        #expect(harness.registry.narrowed.count == 2)
        _ = try await harness.registry.logout(userID: b.id)
        #expect(harness.registry.narrowed.count == 1, "a's, made while a was not active, stays")
        _ = try await harness.registry.logout(userID: a.id)
        #expect(harness.registry.narrowed.count == 0)
        await #expect(throws: SessionError.userLoggedOut(a.id)) {
            _ = try await harness.registry.narrowedAccessToken(userID: a.id, minValidSeconds: 60, narrowing: Self.media)
        }
        #expect(harness.registry.scheduler.scheduledCount == 0, "no timer is left for a dropped token")
    }
}
