import Synchronization
import Testing
import UsherServer

/// The throttle's clock and its lock: an instant read before the lock is taken may be older than one another attempt
/// already stored under it.
@Suite(.timeLimit(.minutes(1)))
struct LoginThrottleClockTests {
    /// A clock that, the first time it is read, lets another login begin (reading a later instant and storing it
    /// under the lock) before it returns its own, earlier, instant: the interleaving two concurrent logins get when
    /// one thread reads the clock, is preempted, and another thread reads it and takes the lock first.
    final class InterleavingClock: Sendable {
        let time = TestTime()
        private let interleaved = Mutex(false)
        let throttle = Mutex<LoginThrottle?>(nil)
        let other = Mutex<LoginThrottle.Ticket?>(nil)
        let otherRefusal = Mutex<LoginThrottle.Refusal?>(nil)

        var source: @Sendable () -> ContinuousClock.Instant {
            {
                let instant = self.time.now
                guard !self.interleaved.withLock({ $0 }) else { return instant }
                self.interleaved.withLock { $0 = true }
                self.time.advance(.milliseconds(1))
                guard let throttle = self.throttle.withLock({ $0 }) else { return instant }
                do {
                    let ticket = try throttle.begin(account: "ann@example.com", peer: 1000)
                    self.other.withLock { $0 = ticket }
                } catch {
                    self.otherRefusal.withLock { $0 = error as? LoginThrottle.Refusal }
                }
                return instant
            }
        }
    }

    @Test func concurrentLoginsWithinTheFreeBudgetAreNeverRefused() throws {
        let clock = InterleavingClock()
        let throttle = LoginThrottle(settings: LoginThrottleTests.settings, now: clock.source)
        clock.throttle.withLock { $0 = throttle }
        // This attempt reads the clock first; the other begins (and stores the later instant) before this one takes
        // the lock. Both are the first of their account and peer: nothing may refuse them.
        let ticket = try throttle.begin(account: "ann@example.com", peer: 1000)
        #expect(clock.otherRefusal.withLock { $0 } == nil)
        let other = try #require(clock.other.withLock { $0 })
        throttle.finish(other, .succeeded)
        throttle.finish(ticket, .succeeded)
        #expect(throttle.trackedCount == (0, 0))
    }
}
