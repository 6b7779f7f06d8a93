import Synchronization

/// A monotonic clock the test moves by hand.
final class TestTime: Sendable {
    private let instant = Mutex(ContinuousClock.now)

    var now: ContinuousClock.Instant { self.instant.withLock { $0 } }

    func advance(_ duration: Duration) {
        self.instant.withLock { $0 += duration }
    }

    var source: @Sendable () -> ContinuousClock.Instant { { self.now } }
}
