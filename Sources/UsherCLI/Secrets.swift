import UsherClient

// JSONDecoder: FoundationEssentials, never Foundation (see Output).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading secrets: from the terminal without echo, or from stdin (never from arguments, which every user of the
/// machine can read in `ps`).
enum Secrets {
    /// Reads a line from the controlling terminal (`/dev/tty`) with echo turned off.
    ///
    /// Echo is restored before this returns or throws, and also when SIGINT, SIGTERM, SIGHUP or SIGQUIT arrives while
    /// the prompt waits, so an interrupted prompt never leaves the terminal silent.
    static func prompt(
        _ prompt: String,
        what: String = "password",
        option: String = "--password-stdin"
    ) throws(CLIError) -> String {
        let descriptor = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CLIError("no terminal to read the \(what) from (use \(option))")
        }
        defer { close(descriptor) }

        var original = termios()
        guard tcgetattr(descriptor, &original) == 0 else {
            throw CLIError("cannot read the terminal settings: \(String(cString: strerror(errno)))")
        }
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        // The Enter key still moves to the next line.
        silent.c_lflag |= tcflag_t(ECHONL)

        EchoRestorer.arm(descriptor: descriptor, settings: original)
        defer {
            tcsetattr(descriptor, TCSAFLUSH, &original)
            EchoRestorer.disarm()
        }
        guard tcsetattr(descriptor, TCSAFLUSH, &silent) == 0 else {
            throw CLIError("cannot turn off echo: \(String(cString: strerror(errno)))")
        }
        self.write(prompt, to: descriptor)
        // Canonical mode hands over a line at a time; reading byte by byte never takes more than the line.
        guard let line = try self.read(from: descriptor, what: what, limit: 4096, line: true, chunk: 1) else {
            throw CLIError("no \(what) was entered")
        }
        return line
    }

    /// Asks for a line that is not secret (an email) on the controlling terminal, echoed as typed; nil when there is
    /// no terminal to ask on (stdin is not a terminal, or no `/dev/tty`), so that a script is never left waiting.
    static func ask(_ prompt: String) throws(CLIError) -> String? {
        guard isatty(STDIN_FILENO) == 1 else { return nil }
        let descriptor = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        self.write(prompt, to: descriptor)
        guard let line = try self.read(from: descriptor, what: "answer", limit: 4096, line: true, chunk: 1) else {
            throw CLIError("nothing was entered")
        }
        return line
    }

    /// The first line of stdin, without its terminator.
    static func firstLineOfStandardInput(what: String) throws(CLIError) -> String {
        // What follows the first line is never used, so reading past it does no harm.
        guard let line = try self.read(from: STDIN_FILENO, what: what, limit: 1 << 20, line: true, chunk: 4096) else {
            throw CLIError("no \(what) on standard input")
        }
        return line
    }

    /// The first two lines of stdin: a current and a new secret (`usher passwd --password-stdin`).
    static func twoLinesOfStandardInput(
        what: String,
        expecting: String? = nil
    ) throws(CLIError) -> (first: String, second: String) {
        let lines =
            try self.withInput(from: STDIN_FILENO, what: what, limit: 1 << 20, line: false, chunk: 4096) { bytes in
                String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).prefix(
                    2
                )
                .map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) }
            } ?? []
        guard lines.count == 2, !lines[0].isEmpty, !lines[1].isEmpty else {
            throw CLIError(
                expecting ?? "give the current \(what) and the new one on the first two lines of standard input"
            )
        }
        return (lines[0], lines[1])
    }

    /// All of stdin as one JSON object (the payload of `--function-stdin`), parsed straight from the wiped buffer.
    static func jsonObjectFromStandardInput(what: String) throws(CLIError) -> [String: JSONValue] {
        let object =
            try self.withInput(
                from: STDIN_FILENO,
                what: what,
                limit: 1 << 20,
                line: false,
                chunk: 65_536
            ) { (bytes: UnsafeRawBufferPointer) -> [String: JSONValue]? in
                guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
                // No copy: the decoder reads the buffer in place.
                let data = Data(
                    bytesNoCopy: UnsafeMutableRawPointer(mutating: base),
                    count: bytes.count,
                    deallocator: .none
                )
                guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: data) else {
                    return nil
                }
                return object
            } ?? nil
        guard let object else {
            throw CLIError("the \(what) on standard input must be a JSON object, such as {\"code\": \"1234\"}")
        }
        return object
    }

    /// Everything on stdin up to its end (at most `limit` bytes; "" when empty): git's credential request, which holds
    /// a token when git asks to erase one.
    static func standardInput(limit: Int) throws(CLIError) -> String {
        try self.read(from: STDIN_FILENO, what: "input", limit: limit, line: false, chunk: 4096) ?? ""
    }

    /// Reads a secret (a line, or everything) from `descriptor`; nil at end of input before any byte or line end.
    private static func read(
        from descriptor: Int32,
        what: String,
        limit: Int,
        line: Bool,
        chunk: Int
    ) throws(CLIError) -> String? {
        try self.withInput(from: descriptor, what: what, limit: limit, line: line, chunk: chunk) { bytes in
            var bytes = bytes
            if line, bytes.last == UInt8(ascii: "\r") { bytes = UnsafeRawBufferPointer(rebasing: bytes.dropLast()) }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Reads into a buffer of `limit` bytes allocated once (so no reallocation leaves a copy behind), lends what was
    /// read to `body`, then overwrites the buffer with zeros before freeing it.
    ///
    /// Swift cannot wipe a `String`: the one `body` makes, and the request built from it, stay in memory until it
    /// is reused. What this guarantees is that the raw input does not linger, and that stdin is read with `read(2)`,
    /// not through stdio's buffer, which would keep a copy.
    private static func withInput<Result>(
        from descriptor: Int32,
        what: String,
        limit: Int,
        line: Bool,
        chunk: Int,
        _ body: (UnsafeRawBufferPointer) -> Result
    ) throws(CLIError) -> Result? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: limit, alignment: 1)
        defer {
            explicit_bzero(buffer.baseAddress!, buffer.count)
            buffer.deallocate()
        }
        var count = 0
        var ended = false
        while count < limit {
            let wanted = min(chunk, limit - count)
            let got = Glibc.read(descriptor, buffer.baseAddress! + count, wanted)
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else {
                throw CLIError("cannot read the \(what): \(String(cString: strerror(errno)))")
            }
            if got == 0 {
                if count == 0 { return nil }
                ended = true
                break
            }
            if line, let newline = buffer[count..<(count + got)].firstIndex(of: UInt8(ascii: "\n")) {
                count = newline
                ended = true
                break
            }
            count += got
        }
        guard ended else { throw CLIError("the \(what) is longer than \(limit) bytes") }
        return body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    private static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }
}

/// Restores the terminal's echo from a signal handler, then lets the signal do what it would have done.
private enum EchoRestorer {
    typealias Handler = @convention(c) (Int32) -> Void

    static let signals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    /// The terminal to restore, and the handlers to put back, while a prompt waits.
    ///
    /// `nonisolated(unsafe)`: written only by `arm` before the handlers are installed and by `disarm` after they are
    /// removed, by the one task that prompts (the CLI prompts once at a time, before it connects); the signal handler
    /// only reads. The handlers live in raw memory so that the signal handler reads them without retaining anything.
    nonisolated(unsafe) static var saved: (descriptor: Int32, settings: termios)?
    nonisolated(unsafe) static let previous: UnsafeMutablePointer<Handler?> = {
        let pointer = UnsafeMutablePointer<Handler?>.allocate(capacity: 65)
        pointer.initialize(repeating: nil, count: 65)
        return pointer
    }()

    static func arm(descriptor: Int32, settings: termios) {
        self.saved = (descriptor, settings)
        let previous = self.previous
        for signal in self.signals {
            previous[Int(signal)] = Glibc.signal(signal) { number in
                if var saved = EchoRestorer.saved {
                    tcsetattr(saved.descriptor, TCSANOW, &saved.settings)
                }
                // Whatever was there before (default: terminate; ignore: carry on) now handles the signal.
                Glibc.signal(number, EchoRestorer.previous[Int(number)])
                raise(number)
            }
        }
    }

    static func disarm() {
        for signal in self.signals {
            Glibc.signal(signal, self.previous[Int(signal)])
        }
        self.saved = nil
    }
}
