import Synchronization
import UsherProtocol

/// The time source of the session registry and the refresh scheduler.
///
/// Deadlines are wall-clock times (token expiries come from providers as wall-clock times), so the clock both tells
/// the time and sleeps until one. Tests inject `ManualClock` to move time by hand; the daemon uses `SystemClock`.
package protocol SessionClock: Sendable {
    func now() -> Timestamp
    /// Returns at or after `deadline`; throws `CancellationError` when the task is cancelled first.
    func sleep(until deadline: Timestamp) async throws
}

/// The system's wall clock. Sleeps are measured on the monotonic clock for the remaining interval, and re-checked
/// against the wall clock afterwards, so a wall-clock jump never makes a timer fire early.
package struct SystemClock: SessionClock {
    package init() {}

    package func now() -> Timestamp { Timestamp.now() }

    package func sleep(until deadline: Timestamp) async throws {
        while true {
            let remaining = deadline.millisecondsSinceEpoch - self.now().millisecondsSinceEpoch
            if remaining <= 0 { return }
            try await ContinuousClock().sleep(for: .milliseconds(remaining))
        }
    }
}

/// A clock that moves only when told to. Sleepers wake when `advance` passes their deadline.
package final class ManualClock: SessionClock {
    private struct Sleeper {
        var deadline: Timestamp
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Timestamp
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    package init(now: Timestamp = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)) {
        self.state = Mutex(State(now: now))
    }

    package func now() -> Timestamp { self.state.withLock { $0.now } }

    /// The number of tasks currently sleeping on this clock.
    package var sleeperCount: Int { self.state.withLock { $0.sleepers.count } }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    package func advance(byMilliseconds milliseconds: Int64) {
        let due: [CheckedContinuation<Void, any Error>] = self.state.withLock { state in
            state.now = state.now.adding(milliseconds: milliseconds)
            let now = state.now
            let dueIDs = state.sleepers.filter { $0.value.deadline <= now }.map(\.key)
            return dueIDs.compactMap { state.sleepers.removeValue(forKey: $0)?.continuation }
        }
        for continuation in due { continuation.resume() }
    }

    package func advance(bySeconds seconds: Int64) {
        self.advance(byMilliseconds: seconds * 1000)
    }

    package func sleep(until deadline: Timestamp) async throws {
        let id = self.state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: Result<Void, any Error>? = self.state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let resumeNow { continuation.resume(with: resumeNow) }
            }
        } onCancel: {
            let continuation = self.state.withLock { $0.sleepers.removeValue(forKey: id)?.continuation }
            continuation?.resume(throwing: CancellationError())
        }
    }
}
