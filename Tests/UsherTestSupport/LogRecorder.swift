import Logging
import Synchronization

/// Keeps every record logged through it, for tests that check what an operator would see, or that nothing secret is
/// logged (tests never bootstrap logging: they hand this recorder's logger to the code under test).
package final class LogRecorder: Sendable {
    package struct Record: Sendable {
        package var level: Logger.Level
        package var message: String
        package var metadata: [String: String]

        /// `level message metadata`, the record as one line of text.
        package var line: String { "\(self.level) \(self.message) \(self.metadata)" }
    }

    private struct State {
        var records: [Record] = []
        /// Tasks waiting until the records satisfy a condition, by waiter number.
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }

    private struct Waiter {
        var condition: @Sendable ([Record]) -> Bool
        var continuation: CheckedContinuation<Void, any Error>
    }

    private let state = Mutex(State())

    package init() {}

    package var all: [Record] { self.state.withLock { $0.records } }

    /// Waits until the records satisfy `condition` (checked now and after every new record), for code that logs from
    /// a task of its own. No time limit of its own: the test's time limit is the hang guard, and cancelling the
    /// waiting task ends the wait with `CancellationError`.
    package func wait(until condition: @escaping @Sendable ([Record]) -> Bool) async throws {
        let number = self.state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = self.state.withLock { state in
                    if condition(state.records) { return .success(()) }
                    // Checked under the lock that the cancellation handler takes: either it runs after this and finds
                    // the waiter, or the task is already marked cancelled here.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[number] = Waiter(condition: condition, continuation: continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            self.state.withLock { $0.waiters.removeValue(forKey: number) }?.continuation.resume(
                throwing: CancellationError()
            )
        }
    }

    /// Every record as a line of text, for substring checks.
    package var text: String { self.all.map(\.line).joined(separator: "\n") }

    /// A logger whose records end up here.
    package func logger(_ label: String = "test") -> Logger {
        Logger(label: label) { _ in Handler(recorder: self) }
    }

    package var logger: Logger { self.logger() }

    fileprivate func append(_ record: Record) {
        let satisfied = self.state.withLock { state in
            state.records.append(record)
            let ready = state.waiters.filter { $0.value.condition(state.records) }
            for number in ready.keys { state.waiters.removeValue(forKey: number) }
            return ready.values.map(\.continuation)
        }
        for continuation in satisfied { continuation.resume() }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { self.metadata[key] }
            set { self.metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = self.metadata.merging(event.metadata ?? [:]) { _, new in new }
            self.recorder.append(
                Record(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" })
            )
        }
    }
}
