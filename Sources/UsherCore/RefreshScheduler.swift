import Synchronization
import UsherProtocol

/// The one timer of the daemon: every user's next token deadline (refresh, retry or refresh-token expiry) lives in a
/// single priority queue, and a single loop sleeps until the earliest one.
///
/// There is no task or timer per user: 100,000 scheduled users cost a heap of 100,000 entries and one sleeping task.
/// When a deadline earlier than the one being slept on is scheduled, the loop is woken and sleeps again on the new
/// earliest deadline.
package actor RefreshScheduler {
    private var heap = DeadlineHeap()
    private let clock: any SessionClock
    private let maximumConcurrency: Int
    private var inFlight = 0
    private let wakeSignal = WakeSignal()

    /// - Parameters:
    ///   - clock: the time source; tests inject `ManualClock`.
    ///   - maximumConcurrency: how many due users are handled at once (refreshes are network calls for some
    ///     providers: a burst of due users must not open a burst of connections).
    package init(clock: any SessionClock, maximumConcurrency: Int = 16) {
        self.clock = clock
        self.maximumConcurrency = max(1, maximumConcurrency)
    }

    package var scheduledCount: Int { self.heap.count }

    package func earliestDeadline() -> Timestamp? { self.heap.earliest() }

    package func deadline(for userID: String) -> Timestamp? { self.heap.deadline(for: userID) }

    package func schedule(_ userID: String, at deadline: Timestamp) {
        let previousEarliest = self.heap.earliest()
        self.heap.schedule(userID, at: deadline)
        if previousEarliest.map({ deadline < $0 }) ?? true { self.wakeSignal.fire() }
    }

    package func cancel(_ userID: String) {
        self.heap.cancel(userID)
    }

    /// Runs until cancelled, calling `onDue` for each user whose deadline has come (at most `maximumConcurrency` at
    /// once). A user is removed from the queue when it is handed to `onDue`; the handler reschedules it.
    package func run(onDue: @escaping @Sendable (String) async -> Void) async {
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                let now = self.clock.now()
                while self.inFlight < self.maximumConcurrency, let userID = self.heap.popDue(now: now) {
                    self.inFlight += 1
                    group.addTask {
                        await onDue(userID)
                        await self.finished()
                    }
                }
                let target = self.inFlight < self.maximumConcurrency ? self.heap.earliest() : nil
                await self.wait(until: target)
            }
            group.cancelAll()
        }
    }

    private func finished() {
        self.inFlight -= 1
        self.wakeSignal.fire()
    }

    /// Sleeps until `deadline` (forever when nil) or until woken by `schedule`/`finished`/cancellation.
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
