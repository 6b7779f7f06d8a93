import Testing
import UsherCore
import UsherProtocol

/// The indexes behind O(log n) changes: paging in the order users were added, who takes over from the active user,
/// and each provider's anonymous user, kept true through adds, updates and removals.
@Suite
struct SessionStateTests {
    static func user(_ index: Int, loggedIn: Bool = true, anonymous: Bool = false, active: Int64 = 0) -> User {
        User(
            id: "u\(index)",
            provider: "p",
            subject: "s\(index)",
            kind: anonymous ? CredentialType.anonymous : CredentialType.emailPassword,
            email: nil,
            name: nil,
            state: loggedIn ? .loggedIn : .loggedOut,
            addedGeneration: Int64(index),
            createdAt: Timestamp(millisecondsSinceEpoch: 0),
            lastLoginAt: nil,
            lastActiveAt: nil,
            activeGeneration: active,
            tokens: nil,
            providerData: nil
        )
    }

    /// Walks every page of `limit`, as a client following `next` would.
    static func pages(_ state: SessionState, limit: Int) -> [[String]] {
        var pages: [[String]] = []
        var after: Int64?
        while true {
            let (users, more) = state.page(after: after, limit: limit)
            pages.append(users.map(\.id))
            guard more, let last = users.last else { return pages }
            after = last.addedGeneration
        }
    }

    @Test func pagesFollowTheOrderUsersWereAddedThroughRemovals() {
        var state = SessionState()
        for index in 1...1000 { state.put(Self.user(index)) }
        // Remove most of them (enough to compact the order more than once), and add some back.
        for index in 1...1000 where !index.isMultiple(of: 7) { state.remove("u\(index)") }
        for index in 1001...1010 { state.put(Self.user(index)) }
        let expected = (1...1010).filter { $0 > 1000 || $0.isMultiple(of: 7) }.map { "u\($0)" }
        #expect(state.allInOrder().map(\.id) == expected)
        for limit in [1, 3, 50, 10_000] {
            let pages = Self.pages(state, limit: limit)
            #expect(pages.flatMap { $0 } == expected, "limit \(limit)")
            #expect(pages.dropLast().allSatisfy { $0.count == limit })
            #expect(pages.last?.isEmpty == false, "no empty last page when the users divide evenly")
        }
        #expect(state.count == expected.count)
    }

    @Test func aPageStartsAfterItsCursorEvenWhenThatUserIsGone() {
        var state = SessionState()
        for index in 1...10 { state.put(Self.user(index)) }
        let first = state.page(after: nil, limit: 4)
        #expect(first.users.map(\.id) == ["u1", "u2", "u3", "u4"])
        state.remove("u4")
        state.remove("u5")
        let second = state.page(after: first.users.last?.addedGeneration, limit: 4)
        #expect(second.users.map(\.id) == ["u6", "u7", "u8", "u9"])
        #expect(second.more)
    }

    @Test func theMostRecentlyActiveLoggedInUserTakesOver() {
        var state = SessionState()
        for index in 1...100 { state.put(Self.user(index, active: Int64(index))) }
        #expect(state.mostRecentlyActiveLoggedInUser() == "u100")
        state.remove("u100")
        #expect(state.mostRecentlyActiveLoggedInUser() == "u99")
        // Logging out takes a user out of the running; becoming active again puts it first.
        state.put(Self.user(99, loggedIn: false, active: 99))
        #expect(state.mostRecentlyActiveLoggedInUser() == "u98")
        state.put(Self.user(3, active: 1000))
        #expect(state.mostRecentlyActiveLoggedInUser() == "u3")
        #expect(state.loggedInCount == 98)
        for index in 1...100 { state.remove("u\(index)") }
        #expect(state.mostRecentlyActiveLoggedInUser() == nil)
        #expect(state.loggedInCount == 0)
    }

    @Test func eachProviderHasItsLoggedInAnonymousUser() {
        var state = SessionState()
        state.put(Self.user(1, anonymous: true, active: 5))
        state.put(Self.user(2, anonymous: false, active: 6))
        #expect(state.loggedInAnonymous(of: "p")?.id == "u1")
        #expect(state.loggedInAnonymous(of: "other") == nil)
        state.put(Self.user(1, loggedIn: false, anonymous: true, active: 5))
        #expect(state.loggedInAnonymous(of: "p") == nil)
    }
}

extension SessionStateTests {
    /// Updating a logged-in user without it becoming active again (a refresh) leaves the indexes as they were: the
    /// recency log does not grow with every refresh.
    @Test func updatesThatKeepTheActivationLeaveTheIndexesAlone() {
        var state = SessionState()
        for index in 1...10 { state.put(Self.user(index, active: Int64(index))) }
        for _ in 1...10_000 {
            var refreshed = Self.user(5, active: 5)
            refreshed.name = "renamed"
            state.put(refreshed)
        }
        #expect(state.loggedInCount == 10)
        #expect(state.mostRecentlyActiveLoggedInUser() == "u10")
        state.remove("u10")
        state.remove("u9")
        #expect(state.mostRecentlyActiveLoggedInUser() == "u8")
        #expect(state.indexEntryCount < 100, "\(state.indexEntryCount) index entries for 8 users")
    }
}
