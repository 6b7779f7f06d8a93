import Testing
import UsherProtocol
import UsherServer
import UsherStore

/// Counts, lockouts and owners kept in the database: a restart (a new throttle, a new monotonic clock, the same
/// database) neither lifts a lockout nor forgets an owner.
@Suite(.timeLimit(.minutes(1)))
struct LoginThrottlePersistenceTests {
    typealias Rules = LoginThrottleTests

    /// One process's clocks: a monotonic test clock, and a wall clock that moves with it from `wallStart`.
    final class Clocks: Sendable {
        let time = TestTime()
        let start: ContinuousClock.Instant
        let wallStart: Timestamp

        init(wallStart: Timestamp) {
            self.start = self.time.now
            self.wallStart = wallStart
        }

        var wall: @Sendable () -> Timestamp {
            {
                let (seconds, attoseconds) = (self.time.now - self.start).components
                return self.wallStart.adding(milliseconds: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
            }
        }

        func throttle(_ database: AppDatabase) async throws -> LoginThrottle {
            let throttle = LoginThrottle(
                settings: Rules.settings,
                store: database,
                now: self.time.source,
                wallNow: self.wall
            )
            try await throttle.restore()
            return throttle
        }
    }

    struct WrongPassword: Error {}

    /// One login attempt through `attempt` (which stores what it changed before it returns).
    static func attempt(
        _ throttle: LoginThrottle,
        peer: UInt32,
        _ outcome: LoginThrottle.Outcome = .failed
    ) async -> LoginThrottle.Refusal? {
        do {
            try await throttle.attempt(
                account: "ann@example.com",
                peer: peer,
                classify: { _ in .failed },
                { if outcome == .failed { throw WrongPassword() } }
            )
            return nil
        } catch let refusal as LoginThrottle.Refusal {
            return refusal
        } catch {
            return nil
        }
    }

    /// Fails from `peer` (waiting out each delay) until the account is locked out for it.
    static func lockOut(_ throttle: LoginThrottle, _ clocks: Clocks, peer: UInt32) async {
        for _ in 0..<100 {
            if let refusal = await Self.attempt(throttle, peer: peer), refusal.retryAfter > Rules.settings.maximumDelay
            {
                return
            }
            clocks.time.advance(Rules.settings.maximumDelay)
        }
        Issue.record("\(peer) was never locked out")
    }

    @Test func aLockoutAndTheOwnerOutliveARestart() async throws {
        let database = try AppDatabase.inMemory()
        let before = Clocks(wallStart: Timestamp(millisecondsSinceEpoch: 1_800_000_000_000))
        let first = try await before.throttle(database)
        #expect(await Self.attempt(first, peer: 1000, .succeeded) == nil, "1000 owns ann")
        await Self.lockOut(first, before, peer: 2000)

        // Ten seconds later, a new daemon: a new monotonic clock, the same database.
        let after = Clocks(wallStart: before.wall().adding(milliseconds: 10_000))
        let second = try await after.throttle(database)
        let refusal = try #require(await Self.attempt(second, peer: 2000, .succeeded))
        #expect(refusal.scope == .account)
        #expect(refusal.retryAfter <= Rules.settings.lockout - .seconds(10))
        #expect(refusal.retryAfter > Rules.settings.lockout - .seconds(20))
        #expect(await Self.attempt(second, peer: 1000, .succeeded) == nil, "the owner is known after the restart")
        // When the lockout is over, the others may try again.
        after.time.advance(Rules.settings.lockout)
        #expect(await Self.attempt(second, peer: 2000, .succeeded) == nil)
    }

    @Test func aWallClockSetBackDoesNotExtendALockout() async throws {
        let database = try AppDatabase.inMemory()
        let before = Clocks(wallStart: Timestamp(millisecondsSinceEpoch: 1_800_000_000_000))
        await Self.lockOut(try await before.throttle(database), before, peer: 2000)
        // The next daemon starts with the wall clock a day behind: the stored lockout looks a day longer.
        let after = Clocks(wallStart: Timestamp(millisecondsSinceEpoch: 1_800_000_000_000 - 86_400_000))
        let second = try await after.throttle(database)
        let refusal = try #require(await Self.attempt(second, peer: 2000))
        #expect(refusal.retryAfter <= Rules.settings.lockout)
    }

    @Test func countsLongForgottenAreDeletedAtStart() async throws {
        let database = try AppDatabase.inMemory()
        let before = Clocks(wallStart: Timestamp(millisecondsSinceEpoch: 1_800_000_000_000))
        let first = try await before.throttle(database)
        #expect(await Self.attempt(first, peer: 2000) == nil)
        // Past forget_after (and any lockout), a restart reads nothing back: the failure is forgotten.
        let after = Clocks(wallStart: before.wall().adding(milliseconds: 3_600_000))
        let second = try await after.throttle(database)
        #expect(second.trackedCount == (0, 0))
        let records = try await database.loadLoginThrottle(
            forgottenBefore: Timestamp(millisecondsSinceEpoch: 0),
            maximumOwners: 100
        )
        #expect(records.counts.isEmpty)
    }
}
