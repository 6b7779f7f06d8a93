import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// Which claims become a user's profile and custom data, and `refresh_profile` against the registry.
@Suite(.timeLimit(.minutes(1)))
struct ProfileTests {
    @Test func theProfileKeepsOnlyStandardClaimsOfTheirStandardType() {
        let profile = UserClaims.profile(from: [
            "sub": "s-1", "iss": "https://id.example.com", "aud": "usher", "nonce": "n-secret", "at_hash": "h",
            "access_token": "a-secret", "name": "Ann Smith", "given_name": "Ann", "email_verified": "true",
            "phone_number_verified": 1, "updated_at": 1_800_000_000, "locale": 42, "groups": ["x"],
        ])
        #expect(
            profile.claims == [
                "name": "Ann Smith", "given_name": "Ann", "email_verified": true, "updated_at": 1_800_000_000,
            ]
        )
        #expect(!profile.json.contains("secret"))
        #expect(UserClaims.profile(from: [:]) == .empty)
        #expect(UserClaims.empty.json == "{}")
    }

    @Test(arguments: ["\n", "\u{0}", "\u{1B}", "\u{85}", "\u{2028}", "\u{202E}"])
    func controlCharactersBecomeSpacesAndKeysWithThemAreLeftOut(control: String) {
        let profile = UserClaims.profile(from: ["name": .string("Ann\(control)Smith"), "nickname": .string(control)])
        #expect(profile.claims == ["name": "Ann Smith"])
        let custom = UserClaims.customData(
            from: ["groups": [.string("a\(control)b"), .object(["k\(control)": 1, "ok": .string("x\(control)")])]],
            names: ["groups"]
        )
        #expect(custom.claims == ["groups": ["a b", ["ok": "x "]]])
    }

    @Test func sizesAreBounded() {
        let long = String(repeating: "x", count: UserClaims.maximumProfileValueBytes + 1)
        #expect(UserClaims.profile(from: ["name": .string(long), "nickname": "n"]).claims == ["nickname": "n"])
        // custom_data: claims in name order while they fit.
        let big = JSONValue.string(String(repeating: "y", count: 3000))
        let custom = UserClaims.customData(from: ["a": big, "b": big, "c": "small"], names: ["c", "b", "a"])
        #expect(custom.claims.keys.sorted() == ["a", "c"])
        #expect(custom.json.utf8.count <= UserClaims.maximumCustomDataBytes)
        // Deep nesting is cut.
        var deep: JSONValue = "bottom"
        for _ in 0..<20 { deep = .array([deep]) }
        #expect(UserClaims.customData(from: ["d": deep], names: ["d"]).claims["d"] != deep)
    }

    @Test func customClaimsNeverNameASecret() {
        for name in ["at_hash", "nonce", "access_token", "refresh_token", "id_token", "c_hash", "client_secret"] {
            #expect(UserClaims.customClaimNameProblem(name) != nil, "\(name)")
            #expect(UserClaims.customData(from: [name: "x"], names: [name]) == .empty)
        }
        #expect(UserClaims.customClaimNameProblem("groups") == nil)
        #expect(UserClaims.customClaimNameProblem("") != nil)
    }

    @Test func refreshProfileStoresChangedClaimsDurablyAndAnnouncesThem() async throws {
        let harness = try await Harness()
        harness.provider.setClaims(["name": "Ann Smith", "locale": "en-GB", "groups": ["staff"]])
        var log = EventLog(harness.registry)
        let ann = try await harness.login("ann@example.com")
        #expect(ann.profile.claims == ["name": "Ann Smith", "locale": "en-GB"])
        #expect(ann.customData.claims == ["groups": ["staff"]])
        #expect(await log.next(2).count == 2)

        // Unchanged at the provider: no change, no event, the same generation.
        let before = await harness.registry.currentGeneration
        let same = try await harness.registry.refreshProfile(userID: nil)
        #expect(same.generation == before)
        #expect(harness.provider.profileReads == 1)

        harness.provider.setClaims(["name": "Ann Jones", "locale": "en-GB", "groups": ["admins"]])
        let refreshed = try await harness.registry.refreshProfile(userID: ann.id)
        #expect(refreshed.user.profile["name"] == "Ann Jones")
        #expect(refreshed.user.name == "Ann Jones")
        #expect(refreshed.user.customData.claims == ["groups": ["admins"]])
        #expect(refreshed.generation == before + 1)
        log.names[ann.id] = "ann"
        // Each refresh_profile refreshed the tokens first (token_refreshed); then the change.
        var event = await log.next()
        while let seen = event, seen.name == .tokenRefreshed { event = await log.next() }
        #expect(event.map(log.summary) == "\(before + 1) user_changed ann")
        if case .userChanged(let user)? = event?.payload { #expect(user.profile["name"] == "Ann Jones") }
        // The session's tokens were refreshed first.
        #expect(harness.provider.refreshCallCount == 2)

        // Durable: a registry on the same database loads it.
        let restarted = harness.restartedRegistry()
        try await restarted.load()
        let loaded = try #require(await restarted.listUsers().users.first)
        #expect(loaded.profile["name"] == "Ann Jones")
        #expect(loaded.customData.claims == ["groups": ["admins"]])
    }

    @Test func refreshProfileNeedsALoggedInUser() async throws {
        let harness = try await Harness()
        await #expect(throws: SessionError.noActiveUser) { try await harness.registry.refreshProfile(userID: nil) }
        let ann = try await harness.login("ann@example.com")
        _ = try await harness.registry.logout(userID: ann.id)
        await #expect(throws: SessionError.userLoggedOut(ann.id)) {
            try await harness.registry.refreshProfile(userID: ann.id)
        }
    }
}
