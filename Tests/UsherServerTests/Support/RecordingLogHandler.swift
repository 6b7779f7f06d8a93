import Logging
import Synchronization

/// Keeps every record logged through it, for tests that check what was logged (tests never bootstrap logging).
final class LogRecords: Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let records = Mutex<[Record]>([])

    var all: [Record] { self.records.withLock { $0 } }

    func append(_ record: Record) { self.records.withLock { $0.append(record) } }

    /// A logger whose records end up here.
    func logger(_ label: String = "test") -> Logger {
        Logger(label: label) { _ in RecordingLogHandler(records: self) }
    }
}

struct RecordingLogHandler: LogHandler {
    let records: LogRecords
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = self.metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        self.records.append(
            LogRecords.Record(
                level: event.level,
                message: "\(event.message)",
                metadata: merged.mapValues { "\($0)" }
            )
        )
    }
}
