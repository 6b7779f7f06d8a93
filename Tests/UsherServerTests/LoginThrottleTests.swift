import Foundation
import Logging
import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherServer
import UsherStore

/// The throttle's rules, driven by a test clock: nothing here sleeps.
@Suite(.timeLimit(.minutes(1)))
struct LoginThrottleTests {
    static var settings: LoginThrottleSettings {
        var settings = LoginThrottleSettings()
        settings.accountFreeFailures = 2
        settings.accountLockoutFailures = 6
        settings.peerFreeFailures = 10
        settings.peerLockoutFailures = 20
        settings.firstDelay = .seconds(1)
        settings.maximumDelay = .seconds(3)
        settings.lockout = .seconds(60)
        settings.forgetAfter = .seconds(600)
        return settings
    }

    /// One attempt that fails (or ends as `outcome`); returns the refusal if it was refused instead.
    @discardableResult
    static func attempt(
        _ throttle: LoginThrottle,
        account: String? = "ann@example.com",
        peer: UInt32 = 1000,
        _ outcome: LoginThrottle.Outcome = .failed
    ) -> LoginThrottle.Refusal? {
        do {
            let ticket = try throttle.begin(account: account, peer: peer)
            throttle.finish(ticket, outcome)
            return nil
        } catch {
            return error
        }
    }

    @Test func freeFailuresThenDoublingDelaysCappedThenALockout() {
        let time = TestTime()
        let throttle = LoginThrottle(settings: Self.settings, now: time.source)
        #expect(Self.attempt(throttle) == nil)
        #expect(Self.attempt(throttle) == nil)
        // The third failure is the first beyond the free ones: the next attempt waits 1 s, then 2 s, then 3 s (the
        // cap).
        #expect(Self.attempt(throttle) == nil)
        for wait in [1, 2, 3] {
            let refusal = Self.attempt(throttle)
            #expect(refusal == LoginThrottle.Refusal(scope: .account, retryAfter: .seconds(wait)))
            time.advance(.seconds(wait) - .milliseconds(1))
            #expect(Self.attempt(throttle)?.retryAfter == .milliseconds(1))
            time.advance(.milliseconds(1))
            #expect(Self.attempt(throttle) == nil, "after waiting \(wait) s")
        }
        // That was the sixth failure: locked out for a minute, whatever the password.
        #expect(Self.attempt(throttle, .succeeded) == LoginThrottle.Refusal(scope: .account, retryAfter: .seconds(60)))
        time.advance(.seconds(59))
        #expect(Self.attempt(throttle, .succeeded)?.retryAfterSeconds == 1)
        time.advance(.seconds(1))
        #expect(Self.attempt(throttle, .succeeded) == nil)
        // The success reset the account.
        #expect(Self.attempt(throttle) == nil)
        #expect(Self.attempt(throttle) == nil)
    }

    @Test func anotherAccountAndAnotherPeerAreUnaffected() {
        let time = TestTime()
        let throttle = LoginThrottle(settings: Self.settings, now: time.source)
        for _ in 0..<6 { Self.attempt(throttle) }
        #expect(Self.attempt(throttle)?.scope == .account)
        #expect(Self.attempt(throttle, account: "bob@example.com") == nil)
        #expect(Self.attempt(throttle, account: "ANN@example.com ", peer: 1001)?.scope == .account, "same account")
        #expect(Self.attempt(throttle, account: "carol@example.com", peer: 1001) == nil)
    }

    @Test func thePeerIsCountedAcrossAccountsAndCredentialTypes() {
        let time = TestTime()
        let throttle = LoginThrottle(settings: Self.settings, now: time.source)
        // API keys, JWTs and function payloads name no account: only the peer counts them.
        for index in 0..<10 {
            #expect(Self.attempt(throttle, account: index.isMultiple(of: 2) ? nil : "u\(index)@example.com") == nil)
        }
        #expect(Self.attempt(throttle, account: nil) == nil, "ten failures are free; the eleventh attempt goes ahead")
        #expect(Self.attempt(throttle, account: nil) == LoginThrottle.Refusal(scope: .peer, retryAfter: .seconds(1)))
        #expect(Self.attempt(throttle, account: "new@example.com")?.scope == .peer)
        #expect(Self.attempt(throttle, account: nil, peer: 2000) == nil, "another uid")
        // A success of the peer's does not wash its failures away: the next failure is its twelfth (a 2 s wait).
        time.advance(.seconds(1))
        #expect(Self.attempt(throttle, account: "ok@example.com", .succeeded) == nil)
        #expect(Self.attempt(throttle, account: nil) == nil)
        #expect(Self.attempt(throttle, account: nil) == LoginThrottle.Refusal(scope: .peer, retryAfter: .seconds(2)))
    }

    @Test func attemptsInFlightCountAsFailuresSoConcurrencyBuysNoGuesses() throws {
        let time = TestTime()
        let throttle = LoginThrottle(settings: Self.settings, now: time.source)
        // Two free failures: two attempts may be in flight at once, the third waits for them.
        let first = try throttle.begin(account: "ann@example.com", peer: 1)
        let second = try throttle.begin(account: "ann@example.com", peer: 2)
        #expect(throws: LoginThrottle.Refusal.self) { try throttle.begin(account: "ann@example.com", peer: 3) }
        throttle.finish(first, .failed)
        throttle.finish(second, .failed)
        // Past the free failures, one at a time.
        time.advance(.seconds(10))
        let third = try throttle.begin(account: "ann@example.com", peer: 4)
        #expect(throws: LoginThrottle.Refusal.self) { try throttle.begin(account: "ann@example.com", peer: 5) }
        throttle.finish(third, .inconclusive)
        #expect(Self.attempt(throttle, peer: 6) == nil)
    }

    @Test func inconclusiveOutcomesCostNothingAndOldCountsAreForgotten() {
        let time = TestTime()
        let throttle = LoginThrottle(settings: Self.settings, now: time.source)
        for _ in 0..<50 { #expect(Self.attempt(throttle, .inconclusive) == nil) }
        for _ in 0..<3 { Self.attempt(throttle) }
        #expect(Self.attempt(throttle) != nil)
        time.advance(.seconds(600))
        #expect(Self.attempt(throttle) == nil)
        #expect(Self.attempt(throttle) == nil)
        #expect(Self.attempt(throttle) == nil, "the count started again from zero")
        #expect(throttle.trackedCount.accounts == 1)
    }

    @Test func memoryIsBoundedWhateverTheNumberOfAccounts() {
        var settings = Self.settings
        settings.maximumTracked = 64
        settings.peerFreeFailures = 100_000
        settings.peerLockoutFailures = 1_000_000
        let throttle = LoginThrottle(settings: settings, now: TestTime().source)
        for index in 0..<10_000 {
            Self.attempt(throttle, account: "guess-\(index)@example.com", peer: UInt32(index))
            #expect(throttle.trackedCount.accounts <= 64 && throttle.trackedCount.peers <= 64)
        }
        // A 60 KB "email" is kept as a short key.
        Self.attempt(throttle, account: String(repeating: "x", count: 60_000))
        #expect(LoginThrottle.accountKey(String(repeating: "x", count: 60_000)).utf8.count <= 320)
        // The most recently failed account is still counted.
        for _ in 0..<3 { Self.attempt(throttle, account: "last@example.com") }
        #expect(Self.attempt(throttle, account: "last@example.com") != nil)
    }

    @Test func aDisabledThrottleAdmitsEverything() {
        var settings = Self.settings
        settings.enabled = false
        let throttle = LoginThrottle(settings: settings, now: TestTime().source)
        for _ in 0..<100 { #expect(Self.attempt(throttle) == nil) }
        #expect(throttle.trackedCount == (0, 0))
    }

    @Test func aRefusalIsRateLimitedWithRetryAfterInWholeSecondsRoundedUp() {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let refusal = LoginThrottle.Refusal(scope: .account, retryAfter: .milliseconds(1200))
        let wire = ResponseError(mapping: refusal, logger: logger)
        #expect(wire.code == .rateLimited)
        #expect(wire.retryAfter == 2)
        #expect(wire.message == "too many failed logins for this account; try again in 2 s")
        let peer = ResponseError(
            mapping: LoginThrottle.Refusal(scope: .peer, retryAfter: .seconds(900)),
            logger: logger
        )
        #expect(peer.retryAfter == 900)
        #expect(peer.message.contains("from this user"))
    }
}
