import Synchronization
import UsherProtocol

/// Tunables of leases (`[leases]`).
package struct LeaseConfiguration: Sendable, Hashable {
    /// `leases.max_delay`: how long a delay lease holds a change back at most.
    package var maximumDelayMilliseconds: Int64
    /// `leases.max_per_uid`: how many leases one uid may hold.
    package var maximumPerUID: Int

    package static let maximumDelayLimitMilliseconds: Int64 = 60_000

    package init(maximumDelayMilliseconds: Int64 = 5_000, maximumPerUID: Int = 16) {
        self.maximumDelayMilliseconds = maximumDelayMilliseconds
        self.maximumPerUID = maximumPerUID
    }
}

/// Leases: "don't switch the active user of this seat under me". Block leases refuse a change (unless forced), delay
/// leases make it wait until they are released or `leases.max_delay` has passed. Leases live in memory (`LeaseBook`);
/// changes of one seat wait for them one after the other, behind the seat's gate, while the registry goes on with
/// other seats and reads go on from the published state.
extension SessionRegistry {
    /// Takes a lease on a seat.
    ///
    /// Taken as a change of its own, in the order of changes: a change computed before it is committed and announced
    /// first (its holder sees it happen before it holds the lease), and every change computed after it sees the lease.
    package func inhibit(
        seat requested: String?,
        mode: LeaseMode,
        who: String,
        why: String,
        holder: LeaseBook.Holder,
        scope: SeatScope = .everywhere
    ) async throws -> TakenLease {
        try self.requireRunning()
        let seat = try self.seat(named: requested)
        try scope.require([seat])
        let (info, _) = try await self.mutate { _ in
            try self.leases.take(
                seat: seat,
                mode: mode,
                who: who,
                why: why,
                holder: holder,
                since: self.clock.now(),
                maximumPerUID: self.leaseConfiguration.maximumPerUID
            )
        }
        return TakenLease(lease: info.lease, seat: seat)
    }

    /// What a change of the active user of some seats was admitted with, and must still satisfy at the moment it is
    /// computed for its commit: every wait before that (a seat's gate, delay leases) is a suspension across which
    /// users move and leases come and go.
    final class SeatAdmission: Sendable {
        /// Thrown from a change's body when the seats it changes are no longer the ones it waited for: the change is
        /// admitted again for the seats it changes now.
        struct Moved: Error {}

        let scope: SeatScope
        let force: Bool
        /// The seats whose gates this change holds and whose delay leases it waited for.
        let waited: Set<String>
        /// After a few rounds of users moving under it, the change goes on without waiting for delay leases on the
        /// new seats (block leases and the scope are still checked).
        let isLastRound: Bool
        /// The block leases a forced change breaks: their holders are told once it is committed. (Set by the change's
        /// body on the registry's actor; a lock only because the admission crosses into the change's closure.)
        private let brokenLeases = Mutex<[LeaseInfo]>([])

        var broken: [LeaseInfo] {
            get { self.brokenLeases.withLock { $0 } }
            set { self.brokenLeases.withLock { $0 = newValue } }
        }

        init(scope: SeatScope, force: Bool, waited: Set<String>, isLastRound: Bool) {
            self.scope = scope
            self.force = force
            self.waited = waited
            self.isLastRound = isLastRound
        }
    }

    /// Checks, inside a change's body (so in the same step as its commit), that it may change the active user of
    /// `changing`: every seat it is about (`changing` and `touching`) is in the peer's scope, it waited for the
    /// seats' delay leases, and no block lease holds them (unless forced; the leases it breaks are recorded).
    func admit(_ admission: SeatAdmission, changing: [String], touching: [String] = []) throws {
        let changing = Set(changing)
        try admission.scope.require(changing.union(touching))
        if !admission.isLastRound, !changing.isSubset(of: admission.waited) { throw SeatAdmission.Moved() }
        var broken: [LeaseInfo] = []
        for seat in changing.sorted() {
            let blocking = self.leases.leases(on: seat, mode: .block)
            guard !blocking.isEmpty else { continue }
            guard admission.force else { throw SessionError.inhibited(seat: seat, holders: blocking) }
            broken += blocking
        }
        admission.broken = broken
    }

    /// Runs a change of the active user of some seats once their leases allow it, behind the seats' gates.
    ///
    /// `seats` names the seats the change would change, read from the state as it is now (again in every round); `change` runs the change,
    /// and its body calls `admit` with the seats it changes then. Block leases refuse it with `inhibited`, unless
    /// `force` (their holders then get `lease_broken` once the change is committed). Delay leases make it wait: their
    /// holders get `switch_pending` as soon as the change is asked for, and the change goes on when they are all
    /// released or the delay their holder was given has passed. The delay belongs to the lease holder, not to each
    /// change: changes queued on a seat share it (see `delayDeadline`). If the seats the change would change are
    /// different by the time it commits (a user moved meanwhile), it is admitted again for the new seats.
    func holdingOff<T>(
        force: Bool,
        scope: SeatScope,
        to userID: String?,
        seats: @autoclosure () throws -> [String],
        _ change: (SeatAdmission) async throws -> T
    ) async throws -> T {
        var round = 1
        while true {
            let wanted = Array(Set(try seats())).sorted()
            let admission = SeatAdmission(
                scope: scope,
                force: force,
                waited: Set(wanted),
                isLastRound: round == Self.admissionRounds
            )
            do {
                return try await self.holdingOff(wanted, admission, to: userID, change)
            } catch is SeatAdmission.Moved {
                // Only rounds before the last throw `Moved`: the loop ends by the last round at the latest.
                round += 1
            }
        }
    }

    static let admissionRounds = 4

    /// Throws `inhibited` when a block lease holds one of `seats` (unforced changes only call it).
    func refuseIfBlocked(_ seats: [String]) throws(SessionError) {
        for seat in seats {
            let blocking = self.leases.leases(on: seat, mode: .block)
            if !blocking.isEmpty { throw .inhibited(seat: seat, holders: blocking) }
        }
    }

    private func holdingOff<T>(
        _ seats: [String],
        _ admission: SeatAdmission,
        to userID: String?,
        _ change: (SeatAdmission) async throws -> T
    ) async throws -> T {
        guard !seats.isEmpty else {
            let result = try await change(admission)
            self.tellBroken(admission.broken, reason: "forced")
            return result
        }
        // Refused before waiting: a change that cannot happen does not hold anyone up.
        if !admission.force { try self.refuseIfBlocked(seats) }
        // The gates matter only while leases can hold a change back: without leases, changes of the seat go straight
        // to `mutate` (in order too), and can share a commit with the ones queued beside them.
        let gated = seats.contains { self.seatGates.isGated($0) || self.leases.isHeld(on: $0) }
        if gated {
            // Told now, not when the change reaches the head of the seat's queue: the holders learn at once that
            // someone wants the seat.
            self.announcePending(on: seats, to: userID)
            await self.enterGates(seats)
        }
        defer { if gated { self.leaveGates(seats) } }
        if gated {
            // Suspension: other seats' changes and every read go on; this seat's next change waits at its gate.
            await self.waitForDelayLeases(on: seats, to: userID)
        }
        let result = try await change(admission)
        self.tellBroken(admission.broken, reason: "forced")
        return result
    }

    /// The moment the delay leases on `seat` stop holding its changes back: the latest of the deadlines their holders
    /// were given, each `leases.max_delay` from the first change that waited for it (nil: no delay lease is held).
    /// Leases that have none yet are given one now, and told `switch_pending`.
    private func delayDeadline(on seat: String, to userID: String?) -> Timestamp? {
        let (deadline, newcomers) = self.seatGates.delayDeadline(
            on: seat,
            delaying: Set(self.leases.leases(on: seat, mode: .delay).map(\.lease)),
            now: self.clock.now(),
            maximumDelayMilliseconds: self.leaseConfiguration.maximumDelayMilliseconds
        )
        if !newcomers.isEmpty, let deadline { self.tellPending(seat, to: userID, deadline) { newcomers.contains($0) } }
        return deadline
    }

    /// Tells the holders of delay leases on `seats` that a change of their active user is asked for.
    private func announcePending(on seats: [String], to userID: String?) {
        for seat in seats {
            let before = self.seatGates.delays(on: seat)
            guard let deadline = self.delayDeadline(on: seat, to: userID) else { continue }
            // Holders given their deadline just now were told by `delayDeadline`; the others hear of this change too.
            self.tellPending(seat, to: userID, deadline) { before?[$0] != nil }
        }
    }

    private func tellPending(_ seat: String, to userID: String?, _ deadline: Timestamp, _ which: (String) -> Bool) {
        let event = Event(
            generation: self.view.generation,
            seat: seat,
            .switchPending(previousUserID: self.state.seats.user(on: seat), userID: userID, deadline: deadline)
        )
        self.leases.notify(seat: seat, mode: .delay) { which($0.lease) ? event : nil }
    }

    /// Waits until the delay leases on `seats` are released or their deadlines have passed.
    private func waitForDelayLeases(on seats: [String], to userID: String?) async {
        for seat in seats {
            while !Task.isCancelled, let deadline = self.delayDeadline(on: seat, to: userID),
                self.clock.now() < deadline
            {
                self.logger.info(
                    "change waits for delay leases",
                    metadata: ["seat": "\(seat)", "deadline": "\(deadline)"]
                )
                // Suspension: leases are released, taken, or the deadline comes; the loop looks again.
                await Self.waitForLeaseChange(on: seat, leases: self.leases, clock: self.clock, until: deadline)
            }
        }
    }

    /// Waits until a delay lease on `seat` is released, or until `deadline` on the injected clock.
    private static func waitForLeaseChange(
        on seat: String,
        leases: LeaseBook,
        clock: any SessionClock,
        until deadline: Timestamp
    ) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await leases.waitForDelayRelease(on: seat) }
            group.addTask { try? await clock.sleep(until: deadline) }
            await group.next()
            group.cancelAll()
        }
    }

    /// After a committed change that no lease held back (a session revoked or expired): the holders of leases on the
    /// seats whose active user it changed are told why.
    func breakLeases(draft: Draft, reason: String) {
        for (seat, _, _) in Self.seatChanges(from: draft.seatsBefore, to: draft.seatsAfter) {
            for lease in self.leases.leases(on: seat) { self.tellBroken(lease, reason: reason) }
        }
    }

    private func tellBroken(_ lease: LeaseInfo, reason: String) {
        let event = Event(
            generation: self.view.generation,
            seat: lease.seat,
            .leaseBroken(lease: lease.lease, reason: reason)
        )
        self.leases.notify(seat: lease.seat) { $0.lease == lease.lease ? event : nil }
    }

    /// Tells the holders of block leases that a forced change broke them.
    private func tellBroken(_ broken: [LeaseInfo], reason: String) {
        guard !broken.isEmpty else { return }
        for lease in broken { self.tellBroken(lease, reason: reason) }
        self.logger.notice(
            "change forced through block leases",
            metadata: ["leases": "\(broken.map(\.lease).joined(separator: ","))"]
        )
    }
}
