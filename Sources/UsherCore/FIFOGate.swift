import DequeModule

/// The state of a first-in, first-out async mutex, kept inside the actor that uses it.
///
/// The registry holds the gate across the `await` that commits a change to disk, so that changes are computed from,
/// and applied to, committed state one at a time (actor reentrancy would otherwise let two changes interleave),
/// while reads, which never take it, keep seeing committed state.
package struct FIFOGate {
    private var held = false
    private var waiters: Deque<CheckedContinuation<Void, Never>> = []

    package init() {}

    /// Takes the gate if it is free; otherwise the caller must `enqueue` and wait.
    package mutating func tryEnter() -> Bool {
        if self.held { return false }
        self.held = true
        return true
    }

    package mutating func enqueue(_ waiter: CheckedContinuation<Void, Never>) {
        self.waiters.append(waiter)
    }

    /// Releases the gate, returning the waiter to resume: ownership passes to it directly.
    package mutating func leave() -> CheckedContinuation<Void, Never>? {
        if let next = self.waiters.popFirst() { return next }
        self.held = false
        return nil
    }
}
