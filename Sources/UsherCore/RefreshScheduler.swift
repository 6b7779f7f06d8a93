import Synchronization
import UsherProtocol

/// The one timer of the daemon: every user's next token deadline (refresh, retry or refresh-token expiry) lives in a
/// single priority queue, and a single loop sleeps until the earliest one.
///
/// There is no task or timer per user: 100,000 scheduled users cost a heap of 100,000 entries and one sleeping task.
/// The queue is a plain structure behind a lock, so scheduling is a synchronous call that the registry makes inside its
/// own work (no hop to another actor and back). When a deadline earlier than the one being slept on is scheduled, the
/// loop is woken and sleeps again on the new earliest deadline.
package final class RefreshScheduler: Sendable {
    private struct State {
        var heap = DeadlineHeap()
        var inFlight = 0
    }

    private let state = Mutex(State())
    private let clock: any SessionClock
    private let maximumConcurrency: Int
    private let wakeSignal = WakeSignal()

    /// - Parameters:
    ///   - clock: the time source; tests inject `ManualClock`.
    ///   - maximumConcurrency: how many due users are handled at once (refreshes are network calls for some
    ///     providers: a burst of due users must not open a burst of connections).
    package init(clock: any SessionClock, maximumConcurrency: Int = 16) {
        self.clock = clock
        self.maximumConcurrency = max(1, maximumConcurrency)
    }

    /// Makes room for `count` users (before scheduling every logged-in user at start).
    package func reserveCapacity(_ count: Int) {
        self.state.withLock { $0.heap.reserveCapacity(count) }
    }

    package var scheduledCount: Int { self.state.withLock { $0.heap.count } }

    package func earliestDeadline() -> Timestamp? { self.state.withLock { $0.heap.earliest() } }

    package func deadline(for userID: String) -> Timestamp? { self.state.withLock { $0.heap.deadline(for: userID) } }

    package func schedule(_ userID: String, at deadline: Timestamp) {
        let wake = self.state.withLock { state in
            let previousEarliest = state.heap.earliest()
            state.heap.schedule(userID, at: deadline)
            return previousEarliest.map { deadline < $0 } ?? true
        }
        if wake { self.wakeSignal.fire() }
    }

    package func cancel(_ userID: String) {
        self.state.withLock { $0.heap.cancel(userID) }
    }

    /// Runs until cancelled, calling `onDue` for each user whose deadline has come (at most `maximumConcurrency` at
    /// once). A user is removed from the queue when it is handed to `onDue`; the handler reschedules it.
    package func run(onDue: @escaping @Sendable (String) async -> Void) async {
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                let now = self.clock.now()
                let (due, target) = self.state.withLock { state -> ([String], Timestamp?) in
                    var due: [String] = []
                    while state.inFlight < self.maximumConcurrency, let userID = state.heap.popDue(now: now) {
                        state.inFlight += 1
                        due.append(userID)
                    }
                    return (due, state.inFlight < self.maximumConcurrency ? state.heap.earliest() : nil)
                }
                for userID in due {
                    group.addTask {
                        await onDue(userID)
                        self.state.withLock { $0.inFlight -= 1 }
                        self.wakeSignal.fire()
                    }
                }
                if due.isEmpty { await self.wait(until: target) }
            }
            group.cancelAll()
        }
    }

    /// Sleeps until `deadline` (forever when nil) or until woken by `schedule`, a finished handler or cancellation.
    private func wait(until deadline: Timestamp?) async {
        let clock = self.clock
        let signal = self.wakeSignal
        await withTaskGroup(of: Void.self) { group in
            if let deadline {
                group.addTask { try? await clock.sleep(until: deadline) }
            }
            group.addTask { await signal.wait() }
            await group.next()
            group.cancelAll()
        }
    }
}

/// A level-triggered wake-up: `fire` before `wait` makes the next `wait` return at once.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func fire() {
        let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = self.state.withLock { state -> Bool in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
