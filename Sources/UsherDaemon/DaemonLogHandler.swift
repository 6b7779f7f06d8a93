import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The daemon's log level, shared by every logger so that a configuration reload can change it.
final class LogLevelSetting: Sendable {
    private let level: Mutex<Logger.Level>
    init(_ level: Logger.Level) { self.level = Mutex(level) }
    var value: Logger.Level {
        get { self.level.withLock { $0 } }
        set { self.level.withLock { $0 = newValue } }
    }
}

/// Writes one line per record to stderr.
///
/// When stderr is the journal (`$JOURNAL_STREAM` names stderr's device and inode), each line starts with `<N>`, the
/// syslog priority, which journald reads as the record's priority (`SyslogLevelPrefix=`); journald adds the time.
/// On a terminal, lines carry a readable UTC timestamp and level instead. Metadata follows as `key=value`. The
/// record is written with a single `write(2)`, so concurrent records never interleave. Callers never pass secrets.
///
/// A record is exactly one line whatever its fields hold: every control character in the message, in every metadata
/// key and in every value is escaped (`LogText`), and fields are bounded (the message to `maximumMessageBytes`, each
/// value to `maximumValueBytes`), so that no request can forge a record, drive a terminal, or make one record large
/// enough for journald to split it (its `LineMax=` is 48 KiB).
struct DaemonLogHandler: LogHandler {
    enum Format: Sendable {
        case journal
        case terminal
    }

    let label: String
    let format: Format
    let levelSetting: LogLevelSetting
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    var logLevel: Logger.Level {
        get { self.levelSetting.value }
        set { self.levelSetting.value = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    /// Whether stderr is connected to the journal, per systemd's `$JOURNAL_STREAM` (`<device>:<inode>`).
    static func stderrIsJournal(environment: [String: String]) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// The longest message written, in UTF-8 bytes (after escaping); longer ones are cut with a marker.
    static let maximumMessageBytes = 4096
    /// The longest metadata value written, in UTF-8 bytes (after escaping).
    static let maximumValueBytes = 1024
    /// The longest metadata key written.
    static let maximumKeyBytes = 128

    func log(event: LogEvent) {
        var merged = self.metadata
        if let provided = self.metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let prefix: String
        switch self.format {
        case .journal:
            prefix = "<\(Self.syslogPriority(event.level))>"
        case .terminal:
            // The level padded to the longest (`critical`), then a space: the message never runs into it.
            prefix = "\(Self.timestamp()) \(Self.padded(event.level.rawValue, to: 8)) "
        }
        let line = Self.render(prefix: prefix, message: "\(event.message)", metadata: merged)
        _ = line.utf8CString.withUnsafeBufferPointer { buffer in
            write(STDERR_FILENO, buffer.baseAddress, buffer.count - 1)
        }
    }

    /// One record as the line written: `prefix`, the message, then `key=value` for each metadata key in order, and a
    /// line feed. Every field is escaped and bounded; a value that is empty or holds a space, `"` or `=` is quoted.
    static func render(prefix: String, message: String, metadata: Logger.Metadata) -> String {
        var line = prefix + LogText.escaped(message, limit: Self.maximumMessageBytes)
        for key in metadata.keys.sorted() {
            let value = LogText.escaped("\(metadata[key]!)", limit: Self.maximumValueBytes)
            line += " \(LogText.escaped(key, limit: Self.maximumKeyBytes))=\(Self.quoted(value))"
        }
        return line + "\n"
    }

    /// Quotes an escaped value when it needs it. Backslashes are already doubled, so `\"` is unambiguous.
    private static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) else { return value }
        return "\"" + value.replacing("\"", with: "\\\"") + "\""
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // 2026-11-28T01:02:03.456Z; without String(format:), which is Foundation's, not FoundationEssentials'.
        func digits(_ value: Int, _ count: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, count - text.count)) + text
        }
        return digits(Int(parts.tm_year) + 1900, 4) + "-" + digits(Int(parts.tm_mon) + 1, 2) + "-"
            + digits(Int(parts.tm_mday), 2) + "T" + digits(Int(parts.tm_hour), 2) + ":" + digits(Int(parts.tm_min), 2)
            + ":" + digits(Int(parts.tm_sec), 2) + "." + digits(Int(now.tv_nsec / 1_000_000), 3) + "Z"
    }

    /// `text` with spaces after it up to `width` characters.
    private static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}
