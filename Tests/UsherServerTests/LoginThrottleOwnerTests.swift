import Testing
import UsherServer

/// An account's owner (the uid of its last successful login or its registration) and every other uid are counted
/// apart, as pam_faillock keeps the owner's own failures apart: another uid's guessing locks the account for the
/// others, never for its owner.
@Suite(.timeLimit(.minutes(1)))
struct LoginThrottleOwnerTests {
    typealias Rules = LoginThrottleTests

    /// Fails from `peer` (waiting out each delay) until the account is locked out for it.
    static func lockOut(_ throttle: LoginThrottle, _ time: TestTime, peer: UInt32) {
        for _ in 0..<100 {
            if let refusal = Rules.attempt(throttle, peer: peer), refusal.retryAfter > Rules.settings.maximumDelay {
                #expect(refusal.scope == .account)
                return
            }
            time.advance(Rules.settings.maximumDelay)
        }
        Issue.record("\(peer) was never locked out")
    }

    @Test func anotherUIDsGuessingDoesNotLockTheOwnerOut() {
        let time = TestTime()
        let throttle = LoginThrottle(settings: Rules.settings, now: time.source)
        #expect(Rules.attempt(throttle, peer: 1000, .succeeded) == nil, "uid 1000 logs in: it owns the account")
        Self.lockOut(throttle, time, peer: 2000)
        #expect(Rules.attempt(throttle, peer: 3000, .succeeded)?.scope == .account, "a third uid is locked out too")
        // The owner's own logins go ahead, however often the others fail.
        #expect(Rules.attempt(throttle, peer: 1000, .succeeded) == nil)
        for _ in 0..<10 {
            #expect(Rules.attempt(throttle, peer: 2000) != nil)
            #expect(Rules.attempt(throttle, peer: 1000, .succeeded) == nil)
        }
    }

    @Test func theOwnersOwnFailuresAreCountedOnTheirOwn() {
        let time = TestTime()
        let throttle = LoginThrottle(settings: Rules.settings, now: time.source)
        #expect(Rules.attempt(throttle, peer: 1000, .succeeded) == nil)
        // The owner guessing its own password wrong is throttled and locked out like anyone ...
        #expect(Rules.attempt(throttle, peer: 1000) == nil)
        #expect(Rules.attempt(throttle, peer: 1000) == nil)
        #expect(Rules.attempt(throttle, peer: 1000) == nil)
        #expect(Rules.attempt(throttle, peer: 1000)?.retryAfter == .seconds(1), "past the free failures, it waits")
        #expect(Rules.attempt(throttle, peer: 2000) == nil, "the others' count is apart")
        time.advance(.seconds(1))
        Self.lockOut(throttle, time, peer: 1000)
        // ... and its failures count for nothing against the others (who have failed once).
        #expect(Rules.attempt(throttle, peer: 2000, .succeeded) == nil)
    }

    @Test func anAccountWithoutAnOwnerIsCountedForEveryone() {
        let time = TestTime()
        let throttle = LoginThrottle(settings: Rules.settings, now: time.source)
        Self.lockOut(throttle, time, peer: 2000)
        #expect(Rules.attempt(throttle, peer: 1000, .succeeded)?.scope == .account)
    }

    @Test func theLastSuccessfulUIDIsTheOwner() {
        let time = TestTime()
        let throttle = LoginThrottle(settings: Rules.settings, now: time.source)
        #expect(Rules.attempt(throttle, peer: 1000, .succeeded) == nil)
        #expect(Rules.attempt(throttle, peer: 1001, .succeeded) == nil, "the account is shared: 1001 owns it now")
        Self.lockOut(throttle, time, peer: 2000)
        #expect(Rules.attempt(throttle, peer: 1001, .succeeded) == nil)
        #expect(Rules.attempt(throttle, peer: 1000, .succeeded)?.scope == .account)
    }
}
