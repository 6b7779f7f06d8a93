import Crypto
import Foundation
import NIOPosix
import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

@testable import UsherProviders

#if canImport(Glibc)
import Glibc
#endif

/// The limiter that bounds how many `function` runs go at once, and how many wait.
@Suite(.timeLimit(.minutes(2)))
struct ConcurrencyLimiterTests {
    @Test func theLimiterQueuesInOrderAndTurnsAwayOnlyWhenTheLineIsFull() async throws {
        let limiter = ConcurrencyLimiter(limit: 1, maximumWaiting: 2)
        let (holding, release) = AsyncStream.makeStream(of: Void.self)
        let order = Order()
        async let holder: Int? = limiter.withPermit {
            for await _ in holding { break }
            return 0
        }
        try await eventually { limiter.running > 0 }
        async let first: Int? = limiter.withPermit {
            order.append(1)
            return 1
        }
        try await eventually { limiter.waiting >= 1 }
        async let second: Int? = limiter.withPermit {
            order.append(2)
            return 2
        }
        try await eventually { limiter.waiting >= 2 }
        // The line is full: the next caller is turned away at once; the waiting ones stay.
        #expect(await limiter.withPermit { 3 } == nil)
        #expect(limiter.waiting == 2)
        release.yield()
        release.finish()
        #expect(await holder == 0)
        #expect(await first == 1)
        #expect(await second == 2)
        #expect(order.values == [1, 2])
        #expect(limiter.running == 0 && limiter.waiting == 0)
    }

    @Test func aCancelledWaiterLeavesTheLine() async throws {
        let limiter = ConcurrencyLimiter(limit: 1, maximumWaiting: 8)
        let (holding, release) = AsyncStream.makeStream(of: Void.self)
        async let holder: Int? = limiter.withPermit {
            for await _ in holding { break }
            return 0
        }
        try await eventually { limiter.running > 0 }
        let waiter = Task { await limiter.withPermit { 1 } }
        try await eventually { limiter.waiting > 0 }
        waiter.cancel()
        #expect(await waiter.value == nil)
        #expect(limiter.waiting == 0)
        release.yield()
        release.finish()
        #expect(await holder == 0)
        #expect(limiter.running == 0)
    }
}

/// The order in which callers got a permit.
private final class Order: Sendable {
    private let recorded = Mutex<[Int]>([])
    var values: [Int] { self.recorded.withLock { $0 } }
    func append(_ value: Int) { self.recorded.withLock { $0.append(value) } }
}
