import Foundation

/// Reading secrets: from the terminal without echo, or from the first line of stdin.
enum Secrets {
    /// Reads a line from the controlling terminal (`/dev/tty`) with echo turned off.
    ///
    /// Echo is restored before this returns or throws, and also when SIGINT, SIGTERM, SIGHUP or SIGQUIT arrives while
    /// the prompt waits, so an interrupted prompt never leaves the terminal silent.
    static func prompt(_ prompt: String) throws(CLIError) -> String {
        let descriptor = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CLIError("no terminal to read the password from (use --password-stdin)")
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

        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1, byte != UInt8(ascii: "\n") else { break }
            bytes.append(byte)
        }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The first line of stdin, without its terminator.
    static func firstLineOfStandardInput(what: String) throws(CLIError) -> String {
        guard let line = readLine(strippingNewline: true) else {
            throw CLIError("no \(what) on standard input")
        }
        return line.hasSuffix("\r") ? String(line.dropLast()) : line
    }

    private static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
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
            previous[Int(signal)] = Foundation.signal(signal) { number in
                if var saved = EchoRestorer.saved {
                    tcsetattr(saved.descriptor, TCSANOW, &saved.settings)
                }
                // Whatever was there before (default: terminate; ignore: carry on) now handles the signal.
                Foundation.signal(number, EchoRestorer.previous[Int(number)])
                raise(number)
            }
        }
    }

    static func disarm() {
        for signal in self.signals {
            Foundation.signal(signal, self.previous[Int(signal)])
        }
        self.saved = nil
    }
}
