import ArgumentParser
import Logging

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

/// What usherd writes to stderr before logging is set up: a configuration error, a wrong command line, the core-dump
/// warning.
///
/// Under systemd, stderr is the journal, and journald files a line without a `<N>` prefix at the unit's default
/// priority, info: `journalctl -p err -u usherd` would then show `status=78/CONFIG` but not why. So, like every log
/// record (`DaemonLogHandler`), each line carries its syslog priority when stderr is the journal, and is written as
/// it is on a terminal. Every line of a multi-line message gets the prefix, since journald makes each a record.
package enum StartupMessage {
    /// Writes `text` (one or more lines) at `level`, in one `write(2)`.
    package static func report(
        _ text: String,
        level: Logger.Level,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        let prefix =
            DaemonLogHandler.stderrIsJournal(environment: environment)
            ? "<\(DaemonLogHandler.syslogPriority(level))>" : ""
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        while lines.last?.isEmpty == true { lines.removeLast() }
        let output = lines.map { prefix + $0 + "\n" }.joined()
        _ = output.utf8CString.withUnsafeBufferPointer { buffer in
            write(STDERR_FILENO, buffer.baseAddress, buffer.count - 1)
        }
    }
}

extension UsherdCommand {
    /// ArgumentParser's `main`, except that an error about the command line (or one thrown by `run` before logging is
    /// set up) is written at error priority through `StartupMessage`. Help and `--version` go to stdout as before.
    package static func mainReportingErrorsAtErrorPriority() async -> Never {
        do {
            var command = try self.parseAsRoot()
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            Glibc.exit(EXIT_SUCCESS)
        } catch {
            let code = self.exitCode(for: error)
            let message = self.fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
            } else if !message.isEmpty {
                StartupMessage.report(message, level: .error)
            }
            Glibc.exit(code.rawValue)
        }
    }
}
