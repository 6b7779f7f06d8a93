import Synchronization

/// Lets at most `limit` callers run at once; the others wait in line, first come first served.
///
/// Waiting is bounded twice: at most `maximumWaiting` callers wait (the next one is turned away at once), and a
/// caller whose `waitingAtMost` has passed when its turn comes is turned away instead of starting late. Whoever holds
/// a permit finishes within its own time limit, so a turn always comes.
final class ConcurrencyLimiter: Sendable {
    private struct Waiter {
        var id: UInt64
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var running = 0
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    let limit: Int
    let maximumWaiting: Int
    private let state = Mutex(State())

    init(limit: Int, maximumWaiting: Int) {
        precondition(limit > 0)
        self.limit = limit
        self.maximumWaiting = maximumWaiting
    }

    /// The number of callers holding a permit.
    var running: Int { self.state.withLock { $0.running } }

    /// The number of callers waiting for one.
    var waiting: Int { self.state.withLock { $0.waiters.count } }

    /// Runs `body` with a permit, or returns nil without running it when no permit came in time (or the task was
    /// cancelled while waiting).
    func withPermit<T: Sendable>(
        waitingAtMost wait: Duration,
        _ body: () async throws -> T
    ) async rethrows -> T? {
        guard await self.acquire(deadline: .now + wait) else { return nil }
        defer { self.release() }
        return try await body()
    }

    private func acquire(deadline: ContinuousClock.Instant) async -> Bool {
        enum Admission {
            case now
            case wait(UInt64)
            case refused
        }
        let id = self.state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let admission = self.state.withLock { state -> Admission in
                    if Task.isCancelled { return .refused }
                    if state.running < self.limit && state.waiters.isEmpty {
                        state.running += 1
                        return .now
                    }
                    guard state.waiters.count < self.maximumWaiting else { return .refused }
                    state.waiters.append(Waiter(id: id, deadline: deadline, continuation: continuation))
                    return .wait(id)
                }
                switch admission {
                case .now: continuation.resume(returning: true)
                case .refused: continuation.resume(returning: false)
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// Hands the permit to the first waiter still in time, turning away those whose time has passed.
    private func release() {
        let now = ContinuousClock.now
        let (late, next) = self.state.withLock { state -> ([Waiter], Waiter?) in
            var late: [Waiter] = []
            while !state.waiters.isEmpty {
                let waiter = state.waiters.removeFirst()
                if waiter.deadline < now {
                    late.append(waiter)
                } else {
                    // The permit passes straight to it: `running` stays the same.
                    return (late, waiter)
                }
            }
            state.running -= 1
            return (late, nil)
        }
        for waiter in late { waiter.continuation.resume(returning: false) }
        next?.continuation.resume(returning: true)
    }
}
