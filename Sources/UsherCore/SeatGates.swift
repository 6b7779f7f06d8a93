import UsherProtocol

/// The changes of each seat's active user waiting in line for the seat's leases, and the delays their delay leases
/// were given (`SessionRegistry+Leases`, `+Seats`).
///
/// A seat has a gate only while a change of it is under way or waits: changes go through it one after the other, in
/// order. Each delay lease on the seat is given a deadline (`leases.max_delay` from the first change that waited for
/// it), shared by every change queued behind that one; once the seat's queue empties, the next change asked for gives
/// the holders a new delay.
///
/// Generic over the waiter so that it is tested without the actor (the registry's is a `CheckedContinuation`).
package struct SeatGates<Waiter> {
    private var gates = GateTable<String, Waiter>()
    /// For each seat whose changes wait in line, the moment each delay lease on it (by lease id) stops holding them
    /// back.
    private var delayDeadlines: [String: [String: Timestamp]] = [:]

    package init() {}

    /// Takes `seat`'s gate if it is free: true. False: the caller waits (`wait`) to be handed it.
    package mutating func enter(_ seat: String) -> Bool { self.gates.enter(seat) }

    package mutating func wait(_ seat: String, _ waiter: Waiter) { self.gates.wait(seat, waiter) }

    /// Releases `seat`'s gate: the next change in line, or nil when the queue is empty, which ends the delays given.
    package mutating func leave(_ seat: String) -> Waiter? {
        if let next = self.gates.leave(seat) { return next }
        self.delayDeadlines[seat] = nil
        return nil
    }

    /// Whether a change of `seat` is under way or waits.
    package func isGated(_ seat: String) -> Bool { self.gates.isHeld(seat) }

    /// The deadlines given to the delay leases on `seat`, by lease id; nil when none was given.
    package func delays(on seat: String) -> [String: Timestamp]? { self.delayDeadlines[seat] }

    /// The moment the delay leases `delaying` (their ids) on `seat` stop holding its changes back: the latest of their
    /// deadlines, nil when there are none. Leases that have none yet are given `now + maximumDelayMilliseconds`, and
    /// returned as `newcomers` (to be told `switch_pending`); deadlines of leases that are gone are forgotten.
    package mutating func delayDeadline(
        on seat: String,
        delaying: Set<String>,
        now: Timestamp,
        maximumDelayMilliseconds: Int64
    ) -> (deadline: Timestamp?, newcomers: Set<String>) {
        guard !delaying.isEmpty else { return (nil, []) }
        var deadlines = self.delayDeadlines[seat, default: [:]].filter { delaying.contains($0.key) }
        var newcomers: Set<String> = []
        for lease in delaying where deadlines[lease] == nil {
            deadlines[lease] = now.adding(milliseconds: maximumDelayMilliseconds)
            newcomers.insert(lease)
        }
        self.delayDeadlines[seat] = deadlines
        return (deadlines.values.max(), newcomers)
    }
}
