import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// Seats declared in the configuration: one active user per seat, at most one seat per user, successors per seat,
/// and every seat's active user kept across a restart.
@Suite("Seats")
struct SeatsTests {
    static let car = SeatConfiguration(source: .config, names: ["driver", "rear"], defaultSeat: "driver")

    func login(_ harness: Harness, _ email: String, seat: String?, move: Bool = false) async throws -> UserChange {
        try await harness.registry.login(
            provider: nil,
            credentials: Harness.credentials(email),
            seat: seat,
            move: move
        )
    }

    @Test("two seats have different active users at the same time", .timeLimit(.minutes(1)))
    func twoSeats() async throws {
        let harness = try await Harness(seats: Self.car)
        var log = EventLog(harness.registry)
        let a = try await self.login(harness, "a@example.com", seat: "driver")
        let b = try await self.login(harness, "b@example.com", seat: "rear")
        log.names = [a.user.id: "a", b.user.id: "b"]
        #expect(a.seat == "driver")
        #expect(b.seat == "rear")
        #expect(
            await log.next(4) == [
                "1 user_logged_in a", "1 active_user_changed driver nil -> a",
                "2 user_logged_in b", "2 active_user_changed rear nil -> b",
            ]
        )
        let view = harness.registry.view
        #expect(view.currentUser(seat: "driver").user?.id == a.user.id)
        #expect(view.currentUser(seat: "rear").user?.id == b.user.id)
        #expect(view.currentUser().user?.id == a.user.id, "the default seat is the driver's")
        #expect(view.currentUser(seat: "rear").seat == "rear")
        // Each seat's token is its own user's.
        let rearToken = try await harness.registry.accessToken(userID: nil, minValidSeconds: 0, seat: "rear")
        #expect(rearToken.userID == b.user.id)
        #expect(
            try view.freshTokenAnswer(userID: nil, seat: "rear", minValidSeconds: 0) { _ in [] }?.userID == b.user.id
        )
        #expect(await harness.users().filter(\.active).count == 2)
        let seats = await harness.registry.listSeats()
        #expect(seats.seats.map(\.name) == ["driver", "rear"])
        #expect(seats.seats.map(\.userID) == [a.user.id, b.user.id])
        #expect(seats.seats.allSatisfy { $0.present && $0.source == .config })
    }

    @Test(
        "a user is active on one seat at most; move takes them over and the seat left behind gets a successor",
        .timeLimit(.minutes(1))
    )
    func atMostOneSeat() async throws {
        let harness = try await Harness(seats: Self.car)
        let a = try await self.login(harness, "a@example.com", seat: "driver").user
        let c = try await self.login(harness, "c@example.com", seat: "driver").user
        _ = try await harness.registry.switchUser(to: a.id, ifGeneration: nil, seat: "driver")
        let b = try await self.login(harness, "b@example.com", seat: "rear").user

        await #expect(throws: SessionError.userActiveElsewhere(userID: a.id, seat: "driver")) {
            try await harness.registry.switchUser(to: a.id, ifGeneration: nil, seat: "rear")
        }
        await #expect(throws: SessionError.userActiveElsewhere(userID: a.id, seat: "driver")) {
            try await self.login(harness, "a@example.com", seat: "rear")
        }
        #expect(harness.registry.view.activeUser(on: "rear") == b.id, "a refused switch changes nothing")

        var log = EventLog(harness.registry)
        log.names = [a.id: "a", b.id: "b", c.id: "c"]
        let moved = try await harness.registry.switchUser(to: a.id, ifGeneration: nil, seat: "rear", move: true)
        #expect(moved.seat == "rear")
        // a leaves the driver's seat, and b the rear one; the driver's seat goes to the most recently active
        // logged-in user who is active nowhere: b, not c.
        #expect(await log.next(2) == ["5 active_user_changed driver a -> b", "5 active_user_changed rear b -> a"])
        #expect(harness.registry.view.activeUser(on: "driver") == b.id)
        #expect(harness.registry.view.activeUser(on: "rear") == a.id)
    }

    @Test("successors are chosen per seat, never a user active on another seat", .timeLimit(.minutes(1)))
    func successorsPerSeat() async throws {
        let harness = try await Harness(seats: Self.car)
        let c = try await self.login(harness, "c@example.com", seat: "driver").user
        let a = try await self.login(harness, "a@example.com", seat: "driver").user
        harness.clock.advance(bySeconds: 1)
        let b = try await self.login(harness, "b@example.com", seat: "rear").user
        var log = EventLog(harness.registry)
        log.names = [a.id: "a", b.id: "b", c.id: "c"]

        // b is the most recently active, but active on the rear seat: the driver's seat goes to c.
        let logout = try await harness.registry.logout(userID: nil, seat: "driver")
        #expect(logout.seat == "driver")
        #expect(await log.next(2) == ["4 user_logged_out a requested", "4 active_user_changed driver a -> c"])
        // The rear seat's user is removed: nobody else is free, so the rear seat has none.
        _ = try await harness.registry.removeUser(b.id)
        #expect(await log.next(2) == ["5 user_removed b", "5 active_user_changed rear b -> nil"])
        #expect(harness.registry.view.activeUser(on: "rear") == nil)
        #expect(harness.registry.view.activeUser(on: "driver") == c.id)
    }

    @Test("a restart keeps every seat's active user", .timeLimit(.minutes(1)))
    func restart() async throws {
        let harness = try await Harness(seats: Self.car)
        let a = try await self.login(harness, "a@example.com", seat: "driver").user
        let b = try await self.login(harness, "b@example.com", seat: "rear").user
        // Made active last, but on the driver's seat: after a restart b must still be the rear seat's user, which the
        // old rule (the most recently active user is the active one) would not say.
        _ = try await self.login(harness, "c@example.com", seat: "rear")
        _ = try await harness.registry.switchUser(to: b.id, ifGeneration: nil, seat: "rear")

        let restarted = harness.restartedRegistry()
        try await restarted.load()
        #expect(restarted.view.activeUser(on: "driver") == a.id)
        #expect(restarted.view.activeUser(on: "rear") == b.id)
        #expect(await restarted.listSeats().seats.map(\.userID) == [a.id, b.id])
    }

    @Test("a seat the configuration does not declare is refused", .timeLimit(.minutes(1)))
    func unknownSeat() async throws {
        let harness = try await Harness(seats: Self.car)
        await #expect(throws: SessionError.seatNotFound("trunk")) {
            try await self.login(harness, "a@example.com", seat: "trunk")
        }
        #expect(await harness.users().isEmpty)
    }

    @Test("logind seats come and go; one that goes keeps its state", .timeLimit(.minutes(1)))
    func logindSeats() async throws {
        let harness = try await Harness(seats: SeatConfiguration(source: .logind))
        var events = harness.registry.events.subscribe(filter: [.seatAdded, .seatRemoved]).events.makeAsyncIterator()
        await harness.registry.seatAppeared("seat1")
        #expect(await events.next()?.seat == "seat1")
        let a = try await self.login(harness, "a@example.com", seat: "seat1").user
        await harness.registry.seatDisappeared("seat1")
        #expect(await events.next()?.name == .seatRemoved)
        var seat1 = await harness.registry.listSeats().seats.first { $0.name == "seat1" }
        #expect(seat1?.present == false)
        #expect(seat1?.userID == a.id)
        await harness.registry.seatAppeared("seat1")
        #expect(await events.next()?.name == .seatAdded)
        seat1 = await harness.registry.listSeats().seats.first { $0.name == "seat1" }
        #expect(seat1 == SeatList.Seat(name: "seat1", source: .logind, present: true, userID: a.id))
        // The default seat is declared, and logind's too: listed as logind's while logind has it, never absent.
        await harness.registry.seatAppeared("seat0")
        #expect(await harness.registry.listSeats().seats.first?.source == .logind)
        await harness.registry.seatDisappeared("seat0")
        #expect(
            await harness.registry.listSeats().seats.first
                == SeatList.Seat(name: "seat0", source: .config, present: true, userID: nil)
        )
    }
}

/// The scripted provider finishes an interactive login `scripted.EMAIL` as that email's password login (only
/// `login_wait` is exercised; nothing begins one).
extension ScriptedProvider: InteractiveLoginProviding {
    func beginLogin(type: LoginFlow, redirectURI: String?, owner: UInt32) async throws -> StartedLogin {
        throw ProviderError.unsupportedCredentials("the scripted provider starts no interactive login")
    }

    /// Every scripted login is root's.
    func owner(ofLogin loginID: String) -> UInt32? { loginID.hasPrefix(self.name + ".") ? 0 : nil }

    func finishLogin(_ loginID: String) async throws -> Authentication {
        let email = String(loginID.dropFirst(self.name.count + 1))
        return try await self.authenticate(credentials: Harness.credentials(email))
    }
}

extension SeatsTests {
    @Test("an interactive login's user becomes active on the seat login_wait names", .timeLimit(.minutes(1)))
    func loginWaitOnASeat() async throws {
        let harness = try await Harness(seats: Self.car)
        let a = try await harness.registry.loginWait(loginID: "scripted.a@example.com", seat: "rear")
        #expect(a.seat == "rear")
        #expect(harness.registry.view.activeUser(on: "rear") == a.user.id)
        #expect(harness.registry.view.activeUser(on: "driver") == nil)
    }
}
