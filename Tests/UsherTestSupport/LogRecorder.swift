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

    private let records = Mutex<[Record]>([])

    package init() {}

    package var all: [Record] { self.records.withLock { $0 } }

    /// Every record as a line of text, for substring checks.
    package var text: String { self.all.map(\.line).joined(separator: "\n") }

    /// A logger whose records end up here.
    package func logger(_ label: String = "test") -> Logger {
        Logger(label: label) { _ in Handler(recorder: self) }
    }

    package var logger: Logger { self.logger() }

    fileprivate func append(_ record: Record) {
        self.records.withLock { $0.append(record) }
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
