import Foundation
import Synchronization

/// A program running in a pseudo-terminal, as a person at a terminal runs it: it has a controlling terminal (so
/// `/dev/tty` opens), its stdin, stdout and stderr are that terminal, and the test types into it and reads what it
/// shows.
///
/// The terminal comes from util-linux `script`, which makes the session leader and controlling terminal that
/// Foundation's `Process` cannot; it passes what the test writes to the terminal, and the terminal's output back.
package final class TerminalSession: Sendable {
    private let process: SpawnedProcess
    private let input: ProcessPipe
    private let output: ProcessPipe
    /// What the terminal showed; shared with the pipe's reading handler.
    private let shown = SharedText()

    /// Starts `executable` with `arguments` in a new terminal. `environment` is set on top of the test's own.
    package init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        let command = ([executable] + arguments).map(Self.shellQuoted).joined(separator: " ")
        var inherited = ProcessInfo.processInfo.environment
        inherited["TERM"] = "xterm"
        inherited["NO_COLOR"] = nil
        self.input = try ProcessPipe()
        self.output = try ProcessPipe()
        let shown = self.shown
        self.output.reading.readabilityHandler = { handle in
            let data = handle.availableData
            shown.text.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        // -q: no "Script started" banner; -e: script's exit status is the program's; -f: flush at once.
        self.process = try SpawnedProcess(
            "/usr/bin/script",
            ["-q", "-e", "-f", "-c", command, "/dev/null"],
            environment: inherited.merging(environment) { _, set in set },
            stdin: .descriptor(self.input.reading.fileDescriptor),
            stdout: .descriptor(self.output.writing.fileDescriptor),
            stderr: .descriptor(self.output.writing.fileDescriptor)
        )
        try self.input.reading.close()
        try self.output.writing.close()
    }

    /// Everything the terminal has shown so far (the program's output, and the echo of what was typed).
    package var text: String { self.shown.text.withLock { $0 } }

    /// Waits until the terminal has shown `text`.
    package func waitFor(_ text: String) async throws {
        do {
            try await eventually { self.text.contains(text) }
        } catch {
            throw TestSupportError("the terminal never showed \(text.debugDescription); it showed:\n\(self.text)")
        }
    }

    /// Types `text` (add "\n" for Enter).
    package func type(_ text: String) throws {
        try self.input.writing.write(contentsOf: Data(text.utf8))
    }

    /// Sends Ctrl-C (the terminal turns it into SIGINT for the program).
    package func interrupt() throws {
        try self.type("\u{03}")
    }

    /// Waits for the program to exit and returns its exit status; it is killed after the hang guard.
    package func exitStatus() async throws -> Int32 {
        let status: Int32
        do {
            status = try await self.process.exit()
        } catch {
            throw TestSupportError("still running; the terminal showed:\n\(self.text)")
        }
        self.output.reading.readabilityHandler = nil
        // What was written before the exit and not yet handed to the handler.
        guard let rest = await readToEnd(self.output.reading, until: ContinuousClock.now + hangGuard) else {
            throw TestSupportError("the program exited, but something it started kept the terminal open")
        }
        self.shown.text.withLock { $0 += String(decoding: rest, as: UTF8.self) }
        return status
    }

    /// Quoted for `sh -c`: in single quotes, each single quote written as `'\''`.
    static func shellQuoted(_ argument: String) -> String {
        "'" + argument.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    deinit {
        if self.process.isRunning { self.process.terminate() }
        try? self.input.writing.close()
    }
}

/// Text appended by one thread and read by others.
private final class SharedText: Sendable {
    let text = Mutex("")
}
