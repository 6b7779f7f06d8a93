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
    package func inhibit(
        seat requested: String?,
        mode: LeaseMode,
        who: String,
        why: String,
        holder: LeaseBook.Holder
    ) throws -> InhibitRequest.Result {
        try self.requireRunning()
        let seat = try self.seat(named: requested)
        let info = try self.leases.take(
            seat: seat,
            mode: mode,
            who: who,
            why: why,
            holder: holder,
            since: self.clock.now(),
            maximumPerUID: self.leaseConfiguration.maximumPerUID
        )
        return InhibitRequest.Result(lease: info.lease, seat: seat)
    }

    /// The outcome of waiting for a seat's leases: which block leases a forced change broke.
    struct HoldOff {
        var broken: [LeaseInfo] = []
    }

    /// Runs a change of the active user of `seats` once their leases allow it, behind the seats' gates.
    ///
    /// Block leases refuse it with `inhibited`, unless `force` (their holders then get `lease_broken` once the change
    /// is committed). Delay leases make it wait: their holders get `switch_pending` at once, and the change goes on
    /// when they are all released or `leases.max_delay` has passed, whichever is first. `from`/`to` name the users
    /// the seat changes between, for `switch_pending`.
    func holdingOff<T>(
        seats: [String],
        force: Bool,
        to userID: String?,
        _ change: () async throws -> T
    ) async throws -> T {
        let seats = Array(Set(seats)).sorted()
        guard !seats.isEmpty else { return try await change() }
        // The gates matter only while leases can hold a change back: without leases, changes of the seat go straight
        // to `mutate` (in order too), and can share a commit with the ones queued beside them.
        let gated = seats.contains { self.seatGates[$0] != nil || self.leases.isHeld(on: $0) }
        if gated { await self.enterGates(seats) }
        defer { if gated { self.leaveGates(seats) } }
        var broken: [LeaseInfo] = []
        for seat in seats {
            let blocking = self.leases.leases(on: seat, mode: .block)
            guard !blocking.isEmpty else { continue }
            guard force else { throw SessionError.inhibited(seat: seat, holders: blocking) }
            broken += blocking
        }
        let delayed = seats.filter { !self.leases.leases(on: $0, mode: .delay).isEmpty }
        if !delayed.isEmpty {
            let deadline = self.clock.now().adding(milliseconds: self.leaseConfiguration.maximumDelayMilliseconds)
            for seat in delayed {
                let from = self.state.seats.user(on: seat)
                let event = Event(
                    generation: self.view.generation,
                    seat: seat,
                    .switchPending(previousUserID: from, userID: userID, deadline: deadline)
                )
                let line = LineCodec.encode(event)
                self.leases.notify(seat: seat, mode: .delay) { _ in line }
            }
            self.logger.info(
                "change waits for delay leases",
                metadata: ["seats": "\(delayed.joined(separator: ","))", "deadline": "\(deadline)"]
            )
            // Suspension: other seats' changes and every read go on; this seat's next change waits at its gate.
            await Self.waitForRelease(of: delayed, leases: self.leases, clock: self.clock, until: deadline)
        }
        let result = try await change()
        for lease in broken { self.tellBroken(lease, reason: "forced") }
        if !broken.isEmpty {
            self.logger.notice(
                "change forced through block leases",
                metadata: ["leases": "\(broken.map(\.lease).joined(separator: ","))"]
            )
        }
        return result
    }

    /// Waits until no delay lease is held on `seats`, or until `deadline` on the injected clock.
    private static func waitForRelease(
        of seats: [String],
        leases: LeaseBook,
        clock: any SessionClock,
        until deadline: Timestamp
    ) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for seat in seats { await leases.waitForDelayLeases(on: seat) }
            }
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
        let line = LineCodec.encode(
            Event(generation: self.view.generation, seat: lease.seat, .leaseBroken(lease: lease.lease, reason: reason))
        )
        self.leases.notify(seat: lease.seat) { $0.lease == lease.lease ? line : [] }
    }
}
