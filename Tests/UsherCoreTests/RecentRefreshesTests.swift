import Testing
import UsherCore
import UsherProtocol

/// The refreshes of the last second, without the actor.
struct RecentRefreshesTests {
    static let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
    static let issued = Timestamp(millisecondsSinceEpoch: 1_799_999_999_000)

    @Test func aRefreshAnswersForTheTokensItMadeForASecond() {
        var recent = RecentRefreshes()
        #expect(recent.isFresh("alice", issuedAt: Self.issued, now: Self.now) == false)
        recent.remember("alice", issuedAt: Self.issued, now: Self.now)
        #expect(recent.isFresh("alice", issuedAt: Self.issued, now: Self.now) == true)
        #expect(recent.isFresh("alice", issuedAt: Self.issued, now: Self.now.adding(milliseconds: 999)))
        #expect(recent.isFresh("alice", issuedAt: Self.issued, now: Self.now.adding(milliseconds: 1000)) == false)
        // A clock that went back does not make it fresh.
        #expect(recent.isFresh("alice", issuedAt: Self.issued, now: Self.now.adding(milliseconds: -1)) == false)
        #expect(recent.isFresh("bob", issuedAt: Self.issued, now: Self.now) == false)
    }

    @Test func tokensOfALaterLoginAreNotTheRefreshs() {
        var recent = RecentRefreshes()
        recent.remember("alice", issuedAt: Self.issued, now: Self.now)
        #expect(recent.isFresh("alice", issuedAt: Self.now, now: Self.now) == false)
    }

    @Test func pastTheThresholdOldEntriesAreDroppedAndRecentOnesKept() {
        var recent = RecentRefreshes()
        for index in 0..<RecentRefreshes.pruneThreshold - 1 {
            recent.remember("old-\(index)", issuedAt: Self.issued, now: Self.now)
        }
        recent.remember("young", issuedAt: Self.issued, now: Self.now.adding(milliseconds: 1500))
        #expect(recent.count == RecentRefreshes.pruneThreshold)
        let later = Self.now.adding(milliseconds: 2000)
        recent.remember("alice", issuedAt: Self.issued, now: later)
        // The old ones went; the one refreshed half a second ago stays.
        #expect(recent.count == 2)
        #expect(recent.isFresh("young", issuedAt: Self.issued, now: later) == true)
        #expect(recent.isFresh("alice", issuedAt: Self.issued, now: later) == true)
    }
}
