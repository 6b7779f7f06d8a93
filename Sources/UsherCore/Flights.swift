/// Single flights, one per key: the work under way for a key, and the callers waiting for its outcome instead of
/// starting the same work again (a user's refresh, a narrowed token being made, a narrowing that uses a refresh token).
///
/// Kept inside the actor that runs the work; generic over the waiter so that it is tested without suspending (the
/// registry's are `CheckedContinuation`s).
package struct Flights<Key: Hashable, Waiter> {
    private var flights: [Key: [Waiter]] = [:]

    package init() {}

    /// Whether work for `key` is under way.
    package func isUnderWay(_ key: Key) -> Bool { self.flights[key] != nil }

    /// Starts the work for `key`: true. False: it is under way already, and the caller waits for it (`wait`).
    package mutating func start(_ key: Key) -> Bool {
        guard self.flights[key] == nil else { return false }
        self.flights[key] = []
        return true
    }

    /// Adds `waiter` to the callers that `land` hands the outcome of the work for `key` to. Called right after `start`
    /// said the work is under way, with no suspension between (a waiter is never dropped: one added for work that is
    /// not under way waits for the next work for its key to land).
    package mutating func wait(_ key: Key, _ waiter: Waiter) {
        self.flights[key, default: []].append(waiter)
    }

    /// The work for `key` ended: returns its waiters, in the order they came, to be told its outcome.
    package mutating func land(_ key: Key) -> [Waiter] {
        self.flights.removeValue(forKey: key) ?? []
    }
}
