import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// Leases against the registry: block refuses and `force` breaks, delay waits for release or the deadline (on the
/// test clock), a revoked session breaks the leases on its seat.
@Suite("Leases")
struct LeaseTests {
    /// A lease holder whose event lines a test reads in order.
    struct Holder {
        let holder: LeaseBook.Holder
        private var events: AsyncStream<Event>.Iterator

        init(connection: UInt64, uid: UInt32 = 1000) {
            let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
            self.holder = LeaseBook.Holder(
                connectionID: connection,
                pid: 4242,
                uid: uid,
                executable: "/usr/bin/pay",
                notify: { continuation.yield($0) }
            )
            self.events = stream.makeAsyncIterator()
        }

        /// The next event sent to this holder.
        mutating func next() async throws -> Event? {
            await self.events.next()
        }
    }

    func take(
        _ harness: Harness,
        _ mode: LeaseMode,
        _ holder: Holder,
        seat: String? = nil
    ) async throws -> String {
        try await harness.registry.inhibit(seat: seat, mode: mode, who: "pay", why: "payment", holder: holder.holder)
            .lease
    }

    @Test(
        "a block lease refuses a switch, naming its holders; force goes through and tells them",
        .timeLimit(.minutes(1))
    )
    func blockAndForce() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        var holder = Holder(connection: 1)
        let lease = try await self.take(harness, .block, holder)

        do {
            _ = try await harness.registry.switchUser(to: a.id, ifGeneration: nil)
            Issue.record("the switch went through a block lease")
        } catch let SessionError.inhibited(seat, holders) {
            #expect(seat == "seat0")
            #expect(holders.map(\.lease) == [lease])
            #expect(holders.first?.who == "pay")
            #expect(holders.first?.pid == 4242)
            #expect(holders.first?.executable == "/usr/bin/pay")
        }
        await #expect(throws: SessionError.self) { try await harness.registry.logout(userID: nil) }
        await #expect(throws: SessionError.self) { try await harness.registry.removeUser(b.id) }
        await #expect(throws: SessionError.self) { try await harness.login("c@example.com") }
        #expect(await harness.activeID() == b.id)
        // Logging out a user who is active nowhere changes no seat: no lease stands in the way.
        _ = try await harness.registry.logout(userID: a.id)

        #expect(await harness.activeID() == b.id)
        let forced = try await harness.registry.login(
            provider: nil,
            credentials: Harness.credentials("a@example.com"),
            force: true
        )
        #expect(await harness.activeID() == forced.user.id)
        let broken = try await holder.next()
        #expect(broken?.payload == .leaseBroken(lease: lease, reason: "forced"))
        #expect(broken?.seat == "seat0")
    }

    @Test(
        "a delay lease holds a switch back until it is released; the holder hears of it at once",
        .timeLimit(.minutes(1))
    )
    func delayUntilRelease() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        var holder = Holder(connection: 1)
        let lease = try await self.take(harness, .delay, holder)

        async let switched = harness.registry.switchUser(to: a.id, ifGeneration: nil)
        let pending = try await holder.next()
        let deadline = harness.clock.now().adding(milliseconds: 5000)
        #expect(pending?.payload == .switchPending(previousUserID: b.id, userID: a.id, deadline: deadline))
        // The switch waits: the seat's user is still b, and reads answer meanwhile.
        #expect(harness.registry.view.activeUser() == b.id)
        #expect(harness.registry.leases.release(lease, connectionID: 1) != nil)
        #expect(try await switched.user.id == a.id)
        #expect(harness.registry.view.activeUser() == a.id)
    }

    @Test("a delay lease holds a switch back until leases.max_delay at most", .timeLimit(.minutes(1)))
    func delayUntilDeadline() async throws {
        let harness = try await Harness(leases: LeaseConfiguration(maximumDelayMilliseconds: 2000))
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        var holder = Holder(connection: 1)
        _ = try await self.take(harness, .delay, holder)
        var log = EventLog(harness.registry)
        log.names = [a.id: "a", b.id: "b"]

        async let switched = harness.registry.switchUser(to: a.id, ifGeneration: nil)
        _ = try await holder.next()
        // The change sleeps on the test clock until the deadline; before it, nothing moves.
        #expect(await waitUntil("the change sleeps until the deadline") { harness.clock.sleeperCount == 1 })
        harness.clock.advance(byMilliseconds: 1999)
        #expect(harness.registry.view.activeUser() == b.id)
        harness.clock.advance(byMilliseconds: 1)
        #expect(try await switched.user.id == a.id)
        #expect(await log.next(1) == ["3 active_user_changed b -> a"])
    }

    @Test("changes of one seat wait in order behind a delay lease; another seat's do not", .timeLimit(.minutes(1)))
    func otherSeatsGoOn() async throws {
        let harness = try await Harness(seats: SeatConfiguration(names: ["seat1"]))
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        var holder = Holder(connection: 1)
        let lease = try await self.take(harness, .delay, holder)

        async let first = harness.registry.switchUser(to: a.id, ifGeneration: nil)
        _ = try await holder.next()
        // Another seat is not held up by seat0's lease.
        let c = try await harness.registry.login(
            provider: nil,
            credentials: Harness.credentials("c@example.com"),
            seat: "seat1"
        )
        #expect(c.seat == "seat1")
        #expect(harness.registry.view.activeUser() == b.id)
        _ = harness.registry.leases.release(lease, connectionID: 1)
        #expect(try await first.user.id == a.id)
    }

    @Test("a lease dies with its connection", .timeLimit(.minutes(1)))
    func connectionCloses() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        _ = try await harness.login("b@example.com")
        let holder = Holder(connection: 7)
        _ = try await self.take(harness, .block, holder)
        #expect(harness.registry.leases.all().count == 1)
        #expect(harness.registry.leases.releaseAll(connectionID: 7).count == 1)
        _ = try await harness.registry.switchUser(to: a.id, ifGeneration: nil)
        #expect(await harness.activeID() == a.id)
    }

    @Test("leases.max_per_uid caps the leases of one uid", .timeLimit(.minutes(1)))
    func perUIDLimit() async throws {
        let harness = try await Harness(leases: LeaseConfiguration(maximumPerUID: 2))
        let holder = Holder(connection: 1)
        _ = try await self.take(harness, .block, holder)
        _ = try await self.take(harness, .delay, holder)
        await #expect(throws: SessionError.tooManyLeases(limit: 2)) { try await self.take(harness, .block, holder) }
        _ = try await self.take(harness, .block, Holder(connection: 2, uid: 1001))
    }

    @Test("a revoked session ends regardless of leases, and their holders are told why", .timeLimit(.minutes(1)))
    func revocationBreaksLeases() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        var holder = Holder(connection: 1)
        let lease = try await self.take(harness, .block, holder)
        harness.provider.script([.reject])
        harness.clock.advance(bySeconds: 10)

        await #expect(throws: SessionError.userLoggedOut(b.id)) {
            try await harness.registry.accessToken(userID: nil, minValidSeconds: 3600)
        }
        #expect(await harness.activeID() == a.id)
        let broken = try await holder.next()
        #expect(broken?.payload == .leaseBroken(lease: lease, reason: "session_revoked"))
    }
}

extension LeaseTests {
    @Test("a stopping daemon ends its leases: a change waiting for a delay lease goes on", .timeLimit(.minutes(1)))
    func stoppingEndsLeases() async throws {
        let harness = try await Harness(leases: LeaseConfiguration(maximumDelayMilliseconds: 60_000))
        let a = try await harness.login("a@example.com")
        _ = try await harness.login("b@example.com")
        var holder = Holder(connection: 1)
        _ = try await self.take(harness, .delay, holder)
        async let switched = harness.registry.switchUser(to: a.id, ifGeneration: nil)
        _ = try await holder.next()
        await harness.registry.announceStopping()
        // Committed without the clock moving: the lease went with the daemon.
        #expect(try await switched.user.id == a.id)
        #expect(harness.registry.leases.all().isEmpty)
    }
}
