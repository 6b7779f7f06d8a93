import Foundation
import Testing
import UsherCore
import UsherProtocol

/// What can change while a change waits for delay leases, and how the changes queued on a seat share the delay its
/// lease holders were given.
extension LeaseTests {
    @Test(
        "a block lease taken while a switch waits for a delay lease refuses it when the wait ends",
        .timeLimit(.minutes(1))
    )
    func blockTakenDuringTheWait() async throws {
        let harness = try await Harness(leases: LeaseConfiguration(maximumDelayMilliseconds: 60_000))
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        var delayHolder = Holder(connection: 1)
        let delay = try await self.take(harness, .delay, delayHolder)

        async let switched = harness.registry.switchUser(to: a.id, ifGeneration: nil)
        _ = try await delayHolder.next()
        // A second switch asked now is refused at once; the one that waits must be refused too when it goes on.
        let block = try await self.take(harness, .block, Holder(connection: 2))
        await #expect(throws: SessionError.self) { try await harness.registry.switchUser(to: a.id, ifGeneration: nil) }
        #expect(harness.registry.leases.release(delay, connectionID: 1) != nil)
        do {
            _ = try await switched
            Issue.record("the switch went through a block lease taken while it waited")
        } catch let SessionError.inhibited(seat, holders) {
            #expect(seat == "seat0")
            #expect(holders.map(\.lease) == [block])
        }
        #expect(harness.registry.view.activeUser() == b.id)
    }

    @Test(
        "a move whose user became active on a blocked seat while it waited is refused",
        .timeLimit(.minutes(1))
    )
    func moveFromASeatBlockedDuringTheWait() async throws {
        let harness = try await Harness(
            seats: SeatConfiguration(names: ["seat1"]),
            leases: LeaseConfiguration(maximumDelayMilliseconds: 60_000)
        )
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        // a is active nowhere now; seat1 has a delay lease.
        var delayHolder = Holder(connection: 1)
        let delay = try await self.take(harness, .delay, delayHolder, seat: "seat1")
        async let moved = harness.registry.switchUser(to: a.id, ifGeneration: nil, seat: "seat1", move: true)
        _ = try await delayHolder.next()
        // Meanwhile a becomes seat0's active user, and seat0 is blocked: the waiting move would take a from it.
        _ = try await harness.registry.switchUser(to: a.id, ifGeneration: nil)
        let block = try await self.take(harness, .block, Holder(connection: 2))
        #expect(harness.registry.leases.release(delay, connectionID: 1) != nil)
        do {
            _ = try await moved
            Issue.record("the move took its user off a seat a block lease holds")
        } catch let SessionError.inhibited(seat, holders) {
            #expect(seat == "seat0")
            #expect(holders.map(\.lease) == [block])
        }
        #expect(harness.registry.view.activeUser() == a.id)
        #expect(harness.registry.view.activeUser(on: "seat1") == nil)
        #expect(harness.registry.view.seat(of: b.id) == nil)
    }

    @Test(
        "switches queued behind a delay lease are announced at once and share the delay its holder was given",
        .timeLimit(.minutes(1))
    )
    func queuedSwitchesShareTheDelay() async throws {
        let harness = try await Harness(leases: LeaseConfiguration(maximumDelayMilliseconds: 2000))
        let a = try await harness.login("a@example.com")
        let c = try await harness.login("c@example.com")
        _ = try await harness.login("b@example.com")
        var holder = Holder(connection: 1)
        _ = try await self.take(harness, .delay, holder)
        let deadline = harness.clock.now().adding(milliseconds: 2000)

        async let first = harness.registry.switchUser(to: a.id, ifGeneration: nil)
        async let second = harness.registry.switchUser(to: c.id, ifGeneration: nil)
        async let third = harness.registry.switchUser(to: a.id, ifGeneration: nil)
        // Each switch is announced when it is asked for, before the clock moves, with the one shared deadline.
        var announced: [String?] = []
        for _ in 0..<3 {
            guard case .switchPending(_, let userID, let until)? = try await holder.next()?.payload else {
                Issue.record("a holder event that is not switch_pending")
                return
            }
            #expect(until == deadline)
            announced.append(userID)
        }
        #expect(announced.sorted { ($0 ?? "") < ($1 ?? "") } == [a.id, a.id, c.id].sorted())
        // One delay for the three of them: when it has passed, every queued switch goes on.
        harness.clock.advance(byMilliseconds: 2000)
        // (Were the delay per change, the second and third would still be asleep here, and this would time out.)
        #expect(try await first.user.id == a.id)
        #expect(try await second.user.id == c.id)
        #expect(try await third.user.id == a.id)

        // The queue is empty: the next switch asked for gives the holder a new delay.
        async let later = harness.registry.switchUser(to: c.id, ifGeneration: nil)
        guard case .switchPending(_, _, let next)? = try await holder.next()?.payload else {
            Issue.record("no switch_pending for a switch after the queue emptied")
            return
        }
        #expect(next == deadline.adding(milliseconds: 2000))
        #expect(await waitUntil("the switch sleeps until its deadline") { harness.clock.sleeperCount == 1 })
        harness.clock.advance(byMilliseconds: 2000)
        #expect(try await later.user.id == c.id)
    }
}
