import DequeModule

/// First-in, first-out async mutexes, one per key, kept inside the actor that uses them: the state, not the waiting.
///
/// The registry holds a gate across the `await`s of a change (its commit to disk, a store lookup), so that changes of
/// one seat, or logins of one identity, are computed from and applied to committed state one at a time (actor
/// reentrancy would otherwise let two of them interleave), while reads, which never take a gate, go on. A key has a
/// gate only while it is held: a table of idle keys costs nothing.
///
/// Generic over the waiter so that it is tested without suspending (the registry's is a `CheckedContinuation`).
package struct GateTable<Key: Hashable, Waiter> {
    private var gates: [Key: Deque<Waiter>] = [:]

    package init() {}

    /// Takes `key`'s gate if it is free: true. False: it is held, and the caller waits (`wait`) to be handed it.
    package mutating func enter(_ key: Key) -> Bool {
        guard self.gates[key] == nil else { return false }
        self.gates[key] = []
        return true
    }

    /// Queues `waiter` for `key`'s gate, held by someone else; `leave` hands the gate to it in its turn.
    package mutating func wait(_ key: Key, _ waiter: Waiter) {
        self.gates[key, default: []].append(waiter)
    }

    /// Releases `key`'s gate: returns the waiter to resume, which holds the gate from now on, or nil when nobody
    /// waits and the gate is free.
    package mutating func leave(_ key: Key) -> Waiter? {
        guard let next = self.gates[key]?.popFirst() else {
            self.gates[key] = nil
            return nil
        }
        return next
    }

    /// Whether `key`'s gate is held.
    package func isHeld(_ key: Key) -> Bool { self.gates[key] != nil }

    /// How many gates are held.
    package var heldCount: Int { self.gates.count }
}
