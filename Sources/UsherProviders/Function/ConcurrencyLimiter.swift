import Synchronization

/// Lets at most `limit` callers run at once; the others wait in line, first come first served.
///
/// A caller waits as long as its turn takes: whoever holds a permit finishes within its own time limit, so the line
/// always moves, and the caller at place `n` gets its turn within `ceil(n / limit)` time limits however slow the
/// machine is. (Turning a waiter away after a fixed time instead refused logins whenever the machine was busy, the
/// very moment queueing is for.) At most `maximumWaiting` callers wait; the next one is turned away at once. A caller
/// whose task is cancelled leaves the line at once.
final class ConcurrencyLimiter: Sendable {
    private struct Waiter {
        var id: UInt64
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

    /// Runs `body` with a permit, or returns nil without running it when the line is full (or the task was cancelled
    /// while waiting).
    func withPermit<T: Sendable>(_ body: () async throws -> T) async rethrows -> T? {
        guard await self.acquire() else { return nil }
        defer { self.release() }
        return try await body()
    }

    private func acquire() async -> Bool {
        enum Admission {
            case now
            case wait
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
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return .wait
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

    /// Hands the permit straight to the first waiter (`running` stays the same), or gives it back.
    private func release() {
        let next = self.state.withLock { state -> Waiter? in
            guard !state.waiters.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.continuation.resume(returning: true)
    }
}
