#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The path other programs (git, kubectl) are to run this CLI by, which must go on working and must run the CLI.
enum ProgramPath {
    /// The path, and why it may not last (nil when it is the installed `usher`).
    struct Choice {
        var path: String
        var warning: String?
    }

    /// The first `usher` on `PATH` when it is this program (the same file, or a copy of it byte for byte): the
    /// installed one, which outlives a build directory. Otherwise this program as it was run: `/proc/self/exe`, unless
    /// that is named `usherd` (one file is both programs, and `usherd` is the daemon's name), when it is the name it was
    /// run by (a symbolic link named `usher`, as busybox's applets are), which runs the CLI.
    static func forOtherTools() throws -> Choice {
        let executable = try Self.executable()
        let onPath = Self.searchPath("usher")
        if let onPath, Self.sameProgram(onPath, executable) { return Choice(path: onPath, warning: nil) }
        var path = executable
        if Self.basename(executable) == "usherd" {
            guard let invoked = Self.invokedPath(), Self.basename(invoked) != "usherd",
                Self.sameProgram(invoked, executable)
            else {
                throw CLIError(
                    "cannot record a command that runs usher's CLI: this program is \(executable), which under that "
                        + "name is the daemon; run it by a name such as usher (a link to it)"
                )
            }
            path = invoked
        }
        let why =
            onPath.map { "\($0) on PATH is another program" } ?? "no usher is on PATH"
        return Choice(
            path: path,
            warning: "\(Terminal.escaped(path)), not an installed usher (\(Terminal.escaped(why))): a build "
                + "directory's path stops working when the build changes or is removed; install usher and run this "
                + "command again"
        )
    }

    /// `/proc/self/exe`: this program's file, whatever link it was run through.
    static func executable() throws -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { throw CLIError("cannot tell where usher is installed (/proc/self/exe)") }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The path this program was run by, absolute, its last link not followed: `argv[0]` with a slash (relative to
    /// the working directory), else the first match on `PATH`.
    static func invokedPath() -> String? {
        guard let argv0 = CommandLine.arguments.first, !argv0.isEmpty else { return nil }
        guard argv0.contains("/") else { return Self.searchPath(argv0) }
        if argv0.hasPrefix("/") { return argv0 }
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        let directory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return directory + "/" + (argv0.hasPrefix("./") ? String(argv0.dropFirst(2)) : argv0)
    }

    /// The first executable `name` in `PATH`'s absolute directories, as found (links not followed).
    static func searchPath(_ name: String) -> String? {
        guard let path = getenv("PATH").map({ String(cString: $0) }) else { return nil }
        for directory in path.split(separator: ":") where directory.hasPrefix("/") {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    static func basename(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// Whether `a` and `b` (links followed) are one file, or two files of the same bytes.
    static func sameProgram(_ a: String, _ b: String) -> Bool {
        var first = stat()
        var second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return false }
        if first.st_dev == second.st_dev && first.st_ino == second.st_ino { return true }
        guard first.st_size == second.st_size else { return false }
        return Self.sameBytes(a, b)
    }

    private static func sameBytes(_ a: String, _ b: String) -> Bool {
        let first = open(a, O_RDONLY | O_CLOEXEC)
        guard first >= 0 else { return false }
        defer { close(first) }
        let second = open(b, O_RDONLY | O_CLOEXEC)
        guard second >= 0 else { return false }
        defer { close(second) }
        var left = [UInt8](repeating: 0, count: 1 << 16)
        var right = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = Self.readFully(first, &left)
            guard count >= 0, Self.readFully(second, &right) == count else { return false }
            if count == 0 { return true }
            // memcmp, not `==` on the slices: a program is tens of megabytes, and element by element (in a debug
            // build above all) that took a minute.
            let equal = left.withUnsafeBytes { l in
                right.withUnsafeBytes { r in memcmp(l.baseAddress!, r.baseAddress!, count) == 0 }
            }
            guard equal else { return false }
        }
    }

    /// Reads until `buffer` is full or the file ends: the number of bytes read, -1 on an error.
    private static func readFully(_ descriptor: Int32, _ buffer: inout [UInt8]) -> Int {
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes { bytes in
                read(descriptor, bytes.baseAddress! + total, bytes.count - total)
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return -1 }
            if count == 0 { break }
            total += count
        }
        return total
    }
}
