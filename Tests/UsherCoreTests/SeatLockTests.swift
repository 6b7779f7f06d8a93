import Crypto
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// The seat's lock in the registry: what a locked seat refuses, on the event loop and through the actor; the PIN; the
/// seat that follows logind; and a lock in order behind a follow that waits for a delay lease.
@Suite("Seat locks")
struct SeatLockTests {
    /// A salted SHA-256 (the daemon uses scrypt): the registry only needs hash and verify to agree.
    struct TestHasher: SecretHasher {
        func hash(_ secret: String) async throws -> String {
            let salt = String(UInt64.random(in: 0...UInt64.max), radix: 16)
            return salt + "$" + Self.digest(salt + secret)
        }

        func verify(_ secret: String, against encoded: String) async -> Bool {
            guard let dollar = encoded.firstIndex(of: "$") else { return false }
            let salt = String(encoded[..<dollar])
            return encoded[encoded.index(after: dollar)...] == Self.digest(salt + secret)
        }

        static func digest(_ text: String) -> String {
            SHA256.hash(data: Array(text.utf8)).map { String($0, radix: 16) }.joined()
        }
    }

    static func harness(seats: SeatConfiguration = SeatConfiguration()) async throws -> Harness {
        let harness = try await Harness(seats: seats, leases: LeaseConfiguration(maximumDelayMilliseconds: 60_000))
        try await harness.registry.useSeatLocks(SeatLockParts(store: harness.database, hasher: TestHasher()))
        return harness
    }

    static var following: SeatConfiguration {
        var seats = SeatConfiguration(source: .logind)
        seats.follow = .logind
        seats.lockAfterPINFailures = 2
        return seats
    }

    @Test("a locked seat refuses its user's tokens on the event loop and in the registry", .timeLimit(.minutes(1)))
    func lockedSeatRefusesTokens() async throws {
        let harness = try await Self.harness()
        var log = EventLog(harness.registry)
        let a = try await harness.login("a@example.com")
        log.names = [a.id: "a"]
        _ = try await harness.registry.setPIN("4821", userID: nil, ownership: .everyone)
        let locked = try await harness.registry.lockSeat(seat: nil)
        #expect(locked == SeatLockState(seat: "seat0", lockedBy: .usherd))
        let view = harness.registry.view
        #expect(view.currentUser().locked)
        #expect(view.currentUser().user?.id == a.id, "the seat keeps its user")
        #expect(throws: SessionError.seatLocked(seat: "seat0")) {
            try view.freshTokenAnswer(userID: nil, minValidSeconds: 0) { _ in [] }
        }
        #expect(throws: SessionError.seatLocked(seat: "seat0")) {
            try view.freshTokenAnswer(userID: a.id, minValidSeconds: 0) { _ in [] }
        }
        #expect(throws: SessionError.seatLocked(seat: "seat0")) { try view.loggedInUser(userID: nil) }
        await #expect(throws: SessionError.seatLocked(seat: "seat0")) {
            try await harness.registry.accessToken(userID: nil, minValidSeconds: 0)
        }
        // Locking again changes nothing; a wrong PIN is counted; the right one unlocks.
        #expect(try await harness.registry.lockSeat(seat: nil).lockedBy == .usherd)
        await #expect(throws: SessionError.pinIncorrect(failures: 1)) {
            try await harness.registry.unlock(seat: nil, pin: "0000")
        }
        let unlocked = try await harness.registry.unlock(seat: nil, pin: "4821")
        #expect(unlocked == SeatLockState(seat: "seat0", lockedBy: nil, pinChecked: true))
        #expect(!view.currentUser().locked)
        #expect(try await harness.registry.accessToken(userID: nil, minValidSeconds: 0).userID == a.id)
        #expect(
            await log.next(4) == [
                "1 user_logged_in a", "1 active_user_changed nil -> a", "1 seat_locked usherd", "1 seat_unlocked pin",
            ]
        )
    }

    @Test("a locked seat's user keeps being refreshed, so unlocking needs no network", .timeLimit(.minutes(1)))
    func refreshesGoOnWhileLocked() async throws {
        let harness = try await Self.harness()
        let a = try await harness.login("a@example.com")
        _ = try await harness.registry.setPIN("4821", userID: nil, ownership: .everyone)
        _ = try await harness.registry.lockSeat(seat: nil)
        let before = harness.provider.refreshCallCount
        // The refresh deadline (300 s before the hour's expiry) comes while the seat is locked: the timer refreshes.
        harness.clock.advance(bySeconds: 3400)
        await harness.registry.deadlineReached(for: a.id)
        #expect(harness.provider.refreshCallCount == before + 1)
        // The provider goes away; the PIN unlocks, and the token refreshed while locked is handed out at once.
        harness.provider.script([], then: .failTransiently)
        _ = try await harness.registry.unlock(seat: nil, pin: "4821")
        let token = try #require(
            try harness.registry.view.freshTokenAnswer(userID: nil, minValidSeconds: 600) { _ in [] }
        )
        #expect(token.userID == a.id)
        #expect(token.expiresAt > harness.clock.now().adding(seconds: 3000))
        #expect(harness.provider.refreshCallCount == before + 1)
    }

    @Test("a locked seat keeps its user, and its user's own uid cannot replace the PIN", .timeLimit(.minutes(1)))
    func lockedSeatKeepsItsUser() async throws {
        let harness = try await Self.harness()
        let b = try await harness.login("b@example.com")
        let a = try await harness.registry.login(
            provider: nil,
            credentials: Harness.credentials("a@example.com"),
            peerUID: 1000
        ).user
        _ = try await harness.registry.setPIN("4821", userID: nil, ownership: .uid(1000))
        _ = try await harness.registry.lockSeat(seat: nil)
        await #expect(throws: SessionError.seatLocked(seat: "seat0")) {
            try await harness.registry.switchUser(to: b.id, ifGeneration: nil)
        }
        await #expect(throws: SessionError.seatLocked(seat: "seat0")) {
            try await harness.registry.setPIN("9999", userID: nil, ownership: .uid(1000))
        }
        // Root may; and the PIN it set is the one that unlocks.
        _ = try await harness.registry.setPIN("9999", userID: a.id, ownership: .everyone)
        await #expect(throws: SessionError.pinIncorrect(failures: 1)) {
            try await harness.registry.unlock(seat: nil, pin: "4821")
        }
        _ = try await harness.registry.unlock(seat: nil, pin: "9999")
        #expect(harness.registry.view.activeUser() == a.id)
    }

    @Test("a followed seat shows the followed user or nobody, and gets no successor", .timeLimit(.minutes(1)))
    func followedSeat() async throws {
        let harness = try await Self.harness(seats: Self.following)
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        let view = harness.registry.view
        try await harness.registry.follow(activeUser: a.id, on: "seat0")
        #expect(view.activeUser(on: "seat0") == a.id)
        try await harness.registry.follow(activeUser: nil, on: "seat0")
        #expect(view.activeUser(on: "seat0") == nil)
        #expect(view.currentUser(seat: "seat0").user == nil)
        try await harness.registry.follow(activeUser: "u_gone", on: "seat0")
        #expect(view.activeUser(on: "seat0") == nil, "a user not on the device is nobody")
        try await harness.registry.follow(activeUser: b.id, on: "seat0")
        #expect(view.activeUser(on: "seat0") == b.id)
        _ = try await harness.registry.logout(userID: nil, seat: "seat0")
        #expect(view.activeUser(on: "seat0") == nil, "no successor: a is logged in, but not at the desktop")
        // logind's lock and unlock; its unlock leaves usherd's lock alone.
        try await harness.registry.follow(locked: true, on: "seat0")
        #expect(view.lock(of: "seat0") == .logind)
        try await harness.registry.follow(locked: false, on: "seat0")
        #expect(view.lock(of: "seat0") == nil)
        _ = try await harness.registry.lockSeat(seat: "seat0")
        try await harness.registry.follow(locked: false, on: "seat0")
        #expect(view.lock(of: "seat0") == .usherd)
    }

    @Test("logind's lock does not hold the seat's user in place; the lock stays with the seat", .timeLimit(.minutes(1)))
    func logindsLockLetsTheSeatMove() async throws {
        let harness = try await Self.harness(seats: Self.following)
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        try await harness.registry.follow(activeUser: a.id, on: "seat0")
        try await harness.registry.follow(locked: true, on: "seat0")
        // A greeter opens b's session before logind makes it active: b takes the seat, still locked.
        _ = try await harness.registry.switchUser(to: b.id, ifGeneration: nil, seat: "seat0")
        #expect(harness.registry.view.activeUser(on: "seat0") == b.id)
        await #expect(throws: SessionError.seatLocked(seat: "seat0")) {
            try await harness.registry.accessToken(userID: b.id, minValidSeconds: 0)
        }
        // logind activates b's unlocked session.
        try await harness.registry.follow(activeUser: b.id, on: "seat0")
        try await harness.registry.follow(locked: false, on: "seat0")
        #expect(try await harness.registry.accessToken(userID: b.id, minValidSeconds: 0).userID == b.id)
    }

    @Test("enough wrong PINs in a row log the seat's user out", .timeLimit(.minutes(1)))
    func wrongPINsLogOut() async throws {
        let harness = try await Self.harness(seats: Self.following)
        let a = try await harness.login("a@example.com")
        try await harness.registry.follow(activeUser: a.id, on: "seat0")
        _ = try await harness.registry.setPIN("4821", userID: a.id, ownership: .everyone)
        try await harness.registry.follow(locked: true, on: "seat0")
        await #expect(throws: SessionError.pinIncorrect(failures: 1)) {
            try await harness.registry.unlock(seat: "seat0", pin: "1111")
        }
        await #expect(throws: SessionError.pinIncorrect(failures: 2)) {
            try await harness.registry.unlock(seat: "seat0", pin: "2222")
        }
        #expect(await harness.user(a.id)?.state == .loggedOut)
        #expect(harness.registry.view.activeUser(on: "seat0") == nil)
        // The count starts again: the next wrong PIN (after a new login) is the first.
        _ = try await harness.login("a@example.com")
        try await harness.registry.follow(activeUser: a.id, on: "seat0")
        await #expect(throws: SessionError.pinIncorrect(failures: 1)) {
            try await harness.registry.unlock(seat: "seat0", pin: "3333")
        }
    }

    @Test("a lock asked while a follow waits for a delay lease is applied after it", .timeLimit(.minutes(1)))
    func lockInOrderBehindAWaitingFollow() async throws {
        let harness = try await Self.harness(seats: Self.following)
        var log = EventLog(harness.registry)
        let a = try await harness.login("a@example.com")
        let b = try await harness.login("b@example.com")
        log.names = [a.id: "a", b.id: "b"]
        var holder = LeaseTests.Holder(connection: 1)
        let lease = try await harness.registry.inhibit(
            seat: "seat0",
            mode: .delay,
            who: "pay",
            why: "payment",
            holder: holder.holder
        ).lease
        async let followed: Void = harness.registry.follow(activeUser: a.id, on: "seat0")
        #expect(try await holder.next()?.name == .switchPending)
        async let locked: Void = harness.registry.follow(locked: true, on: "seat0")
        #expect(harness.registry.view.lock(of: "seat0") == nil, "the lock waits behind the follow")
        #expect(harness.registry.leases.release(lease, connectionID: 1) != nil)
        _ = try await (followed, locked)
        #expect(harness.registry.view.activeUser(on: "seat0") == a.id)
        #expect(harness.registry.view.lock(of: "seat0") == .logind)
        #expect(
            await log.next(6).suffix(2) == ["3 active_user_changed b -> a", "3 seat_locked logind"]
        )
    }
}
