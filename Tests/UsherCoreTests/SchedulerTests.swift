import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// The one timer queue: `DeadlineHeap` and the `RefreshScheduler` loop over it.
@Suite("Refresh scheduler")
struct SchedulerTests {
    private static let start = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)

    private static func at(_ seconds: Int64) -> Timestamp { Self.start.adding(seconds: seconds) }

    /// Pops every entry due at `now`, in order.
    private static func popAll(_ heap: inout DeadlineHeap, now: Timestamp) -> [String] {
        var popped: [String] = []
        while let userID = heap.popDue(now: now) { popped.append(userID) }
        return popped
    }

    @Test("deadlines pop earliest first, and only once due")
    func ordering() {
        var heap = DeadlineHeap()
        #expect(heap.earliest() == nil)
        heap.schedule("c", at: Self.at(30))
        heap.schedule("a", at: Self.at(10))
        heap.schedule("d", at: Self.at(40))
        heap.schedule("b", at: Self.at(20))
        #expect(heap.count == 4)
        #expect(heap.earliest() == Self.at(10))

        #expect(heap.popDue(now: Self.at(9)) == nil)
        #expect(Self.popAll(&heap, now: Self.at(20)) == ["a", "b"])
        #expect(heap.earliest() == Self.at(30))
        #expect(Self.popAll(&heap, now: Self.at(100)) == ["c", "d"])
        #expect(heap.count == 0)
        #expect(heap.earliest() == nil)
    }

    @Test("equal deadlines pop in the order they were scheduled")
    func ties() {
        var heap = DeadlineHeap()
        for name in ["e", "b", "d", "a", "c"] { heap.schedule(name, at: Self.at(5)) }
        #expect(Self.popAll(&heap, now: Self.at(5)) == ["e", "b", "d", "a", "c"])
    }

    @Test("scheduling a user again replaces its deadline; cancel removes it")
    func replaceAndCancel() {
        var heap = DeadlineHeap()
        heap.schedule("a", at: Self.at(10))
        heap.schedule("b", at: Self.at(20))
        heap.schedule("c", at: Self.at(30))
        heap.schedule("a", at: Self.at(25))
        #expect(heap.count == 3)
        #expect(heap.deadline(for: "a") == Self.at(25))
        #expect(heap.earliest() == Self.at(20))

        heap.schedule("c", at: Self.at(5))
        heap.cancel("b")
        heap.cancel("nobody")
        #expect(heap.count == 2)
        #expect(heap.deadline(for: "b") == nil)
        #expect(heap.earliest() == Self.at(5))
        #expect(Self.popAll(&heap, now: Self.at(100)) == ["c", "a"])

        // A cancelled user can be scheduled again.
        heap.schedule("b", at: Self.at(1))
        #expect(Self.popAll(&heap, now: Self.at(100)) == ["b"])
    }

    /// The limit is a hang guard: a debug build does this in seconds, and took 112 s on a 2-core machine that was
    /// booting a container and building at the same time.
    @Test("100,000 deadlines, rescheduled and cancelled at random, pop in order", .timeLimit(.minutes(5)))
    func manyDeadlines() {
        var random = SeededGenerator(seed: 42)
        var heap = DeadlineHeap()
        var expected: [String: Int64] = [:]
        let users = (0..<100_000).map { "u\($0)" }
        for user in users {
            let deadline = Int64(random.next() % 1_000_000)
            heap.schedule(user, at: Self.start.adding(milliseconds: deadline))
            expected[user] = deadline
        }
        // Replace a third and cancel a tenth, which leaves many stale entries in the heap.
        for user in users where random.next() % 3 == 0 {
            let deadline = Int64(random.next() % 1_000_000)
            heap.schedule(user, at: Self.start.adding(milliseconds: deadline))
            expected[user] = deadline
        }
        for user in users where random.next() % 10 == 0 {
            heap.cancel(user)
            expected[user] = nil
        }
        #expect(heap.count == expected.count)

        var popped: [String] = []
        popped.reserveCapacity(expected.count)
        var previous = Int64.min
        var outOfOrder = 0
        while let user = heap.popDue(now: Self.start.adding(milliseconds: 1_000_000)) {
            let deadline = expected[user] ?? -1
            if deadline < previous { outOfOrder += 1 }
            previous = deadline
            popped.append(user)
        }
        #expect(outOfOrder == 0)
        #expect(popped.count == expected.count)
        #expect(Set(popped) == Set(expected.keys))
        #expect(heap.count == 0)
    }

    @Test("the loop hands each due user to the handler once", .timeLimit(.minutes(1)))
    func runHandsOutDueUsers() async throws {
        let clock = ManualClock(now: Self.start)
        let scheduler = RefreshScheduler(clock: clock)
        let due = DueLog()
        scheduler.schedule("a", at: Self.at(10))
        scheduler.schedule("b", at: Self.at(20))
        scheduler.schedule("c", at: Self.at(30))
        scheduler.cancel("b")

        await withTaskGroup(of: Void.self) { group in
            group.addTask { await scheduler.run { due.append($0) } }
            #expect(await waitUntilSleeping(clock))
            clock.advance(bySeconds: 25)
            #expect(await waitUntil("a is due") { due.users == ["a"] })
            clock.advance(bySeconds: 10)
            #expect(await waitUntil("c is due") { due.users == ["a", "c"] })
            group.cancelAll()
        }
        #expect(due.users == ["a", "c"], "b was cancelled")
    }

    @Test("scheduling an earlier deadline wakes the sleeping loop", .timeLimit(.minutes(1)))
    func earlierDeadlineWakes() async throws {
        let clock = ManualClock(now: Self.start)
        let scheduler = RefreshScheduler(clock: clock)
        let due = DueLog()
        scheduler.schedule("late", at: Self.at(3600))

        await withTaskGroup(of: Void.self) { group in
            group.addTask { await scheduler.run { due.append($0) } }
            #expect(await waitUntilSleeping(clock))

            scheduler.schedule("early", at: Self.at(1))
            clock.advance(bySeconds: 1)
            #expect(await waitUntil("the early user is handled") { due.users == ["early"] })
            #expect(await waitUntilSleeping(clock))
            #expect(scheduler.earliestDeadline() == Self.at(3600))
            group.cancelAll()
        }
        #expect(due.users == ["early"])
    }

    @Test("an idle loop is one sleeper, however many users are scheduled", .timeLimit(.minutes(3)))
    func idleCost() async throws {
        let clock = ManualClock(now: Self.start)
        let scheduler = RefreshScheduler(clock: clock)
        let due = DueLog()
        for index in 0..<10_000 {
            scheduler.schedule("u\(index)", at: Self.at(60 + Int64(index)))
        }
        #expect(scheduler.scheduledCount == 10_000)

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await scheduler.run { due.append($0) } }
            #expect(await waitUntilSleeping(clock))
            var most = 0
            for _ in 0..<50 {
                most = max(most, clock.sleeperCount)
                try await Task.sleep(for: .milliseconds(1))
            }
            #expect(most == 1, "one sleeping task, not one per user")
            #expect(due.users.isEmpty)

            // The first hundred come due; the loop handles them and goes back to one sleeper.
            clock.advance(bySeconds: 60 + 99)
            #expect(await waitUntil("100 users are handled") { due.users.count == 100 })
            #expect(await waitUntilSleeping(clock))
            #expect(scheduler.scheduledCount == 9_900)
            group.cancelAll()
        }
        #expect(Set(due.users) == Set((0..<100).map { "u\($0)" }), "exactly the due users, each once")
    }

    @Test("the loop stops when cancelled", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        let clock = ManualClock(now: Self.start)
        let scheduler = RefreshScheduler(clock: clock)
        scheduler.schedule("a", at: Self.at(60))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await scheduler.run { _ in } }
            #expect(await waitUntilSleeping(clock))
            group.cancelAll()
            try await group.waitForAll()
        }
        #expect(clock.sleeperCount == 0)
    }
}

/// The users a scheduler handed out, in order.
private final class DueLog: Sendable {
    private let state = Mutex<[String]>([])

    var users: [String] { self.state.withLock { $0 } }

    func append(_ userID: String) { self.state.withLock { $0.append(userID) } }
}
