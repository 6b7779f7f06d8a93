#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Running another program and waiting for it: `posix_spawnp`, not Foundation's `Process` (see Output).
enum Spawn {
    /// Runs `arguments` (the program looked up in `PATH`) and waits for it; an error unless it exits 0.
    static func run(_ arguments: [String]) throws {
        let pid = try Self.start(arguments, nil)
        guard try Self.exitsZero(pid, arguments) else {
            throw CLIError("\(arguments.prefix(3).joined(separator: " ")) failed")
        }
    }

    /// Runs `arguments` with stdin from /dev/null and returns what it printed on stdout (at most `limit` bytes; more
    /// is left unread); nil when it exits non-zero. Its stderr is the caller's.
    static func output(_ arguments: [String], limit: Int) throws -> String? {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            throw CLIError("cannot run \(arguments[0]): \(String(cString: strerror(errno)))")
        }
        // Neither end may stay open in another program this one starts (the child gets the write end as its stdout).
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        let pid: pid_t
        do {
            pid = try Self.start(arguments, &actions)
        } catch {
            for end in pipeEnds { close(end) }
            throw error
        }
        close(pipeEnds[1])
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let count = read(pipeEnds[0], &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        // A child still writing past the limit gets EPIPE or SIGPIPE once the pipe is closed; it is waited for below.
        close(pipeEnds[0])
        guard try Self.exitsZero(pid, arguments) else { return nil }
        return String(decoding: bytes.prefix(limit), as: UTF8.self)
    }

    /// Starts `arguments`, the program looked up in `PATH`, with the core file limit it would have had (`CoreDumps`)
    /// and `actions` done in the child: its process id.
    private static func start(
        _ arguments: [String],
        _ actions: UnsafePointer<posix_spawn_file_actions_t>?
    ) throws -> pid_t {
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let started = CoreDumps.restored { posix_spawnp(&pid, arguments[0], actions, nil, argv, environ) }
        guard started == 0 else {
            throw CLIError("cannot run \(arguments[0]): \(String(cString: strerror(started)))")
        }
        return pid
    }

    /// Waits for `pid`, started with `arguments`, to end: whether it exited with status 0.
    private static func exitsZero(_ pid: pid_t, _ arguments: [String]) throws -> Bool {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw CLIError("lost \(arguments[0]): \(String(cString: strerror(errno)))") }
        }
        // WIFEXITED and WEXITSTATUS, which Swift does not import.
        return status & 0x7F == 0 && (status >> 8) & 0xFF == 0
    }
}
