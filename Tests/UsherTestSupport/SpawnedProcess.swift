import Foundation
import Synchronization

/// A program the tests start (a daemon, the CLI, a test server), spawned so that no other process can hold on to its
/// pipes.
///
/// Foundation's `Process` is not safe for a test process that starts hundreds of programs from parallel tests: it
/// closes the descriptors of the child by a list made before it spawns, so a pipe another test opens in the meantime
/// leaks into the child, and its `Pipe`s and the socket it watches the child with are inheritable. A daemon that
/// inherits the write end of another test's pipe keeps that test waiting for end of file until the daemon exits; one
/// that inherits the socket keeps `isRunning` true after the other test's program exited. This type spawns with
/// `posix_spawn`, closes every descriptor above 2 in the child (`posix_spawn_file_actions_addclosefrom_np`), makes its
/// pipes close-on-exec, and learns of the exit from a pidfd (readable when the process exits) and `waitpid`, so
/// nothing of one test reaches another test's programs.
///
/// (Not swift-subprocess, which the daemon uses for hooks: its API runs a program within a closure's scope, and the
/// tests keep daemons and servers running across scopes, restart them and signal them.)
package final class SpawnedProcess: Sendable {
    /// Where one of the child's standard streams goes.
    package enum Stream: Sendable {
        /// /dev/null.
        case null
        /// The test process's own stream.
        case inherit
        /// A descriptor the caller owns (a file, or one end of a `ProcessPipe`); the child gets a copy.
        case descriptor(Int32)
    }

    package let processIdentifier: pid_t
    /// Readable once the process has exited (`pidfd_open`, close-on-exec): `exit(within:)` waits on it.
    private let pidfd: Int32
    private let status = Mutex<Int32?>(nil)

    /// Starts `executable` with `arguments`, in a process group of its own (as Foundation's `Process` does), with
    /// default signal dispositions and no blocked signals. `environment` replaces the test's own when given.
    package init(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String]? = nil,
        stdin: Stream = .null,
        stdout: Stream = .null,
        stderr: Stream = .null
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (stream, target) in [(stdin, STDIN_FILENO), (stdout, STDOUT_FILENO), (stderr, STDERR_FILENO)] {
            switch stream {
            case .null:
                let mode = target == STDIN_FILENO ? O_RDONLY : O_WRONLY
                try Self.check(posix_spawn_file_actions_addopen(&actions, target, "/dev/null", mode, 0), "addopen")
            case .inherit:
                break
            case .descriptor(let descriptor):
                try Self.check(posix_spawn_file_actions_adddup2(&actions, descriptor, target), "adddup2")
            }
        }
        guard let closeFrom = Self.addCloseFrom else {
            throw TestSupportError("posix_spawn_file_actions_addclosefrom_np is missing: the tests need glibc 2.34")
        }
        try Self.check(closeFrom(&actions, 3), "addclosefrom_np")

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGQUIT] { sigaddset(&defaults, signal) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setpgroup(&attributes, 0)
        let flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        try Self.check(posix_spawnattr_setflags(&attributes, Int16(flags)), "setflags")

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let envp =
            (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for variable in envp { free(variable) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw TestSupportError("could not start \(executable): \(String(cString: strerror(spawned)))")
        }
        // The child is not reaped before `isRunning` reaps it, so its pid cannot name another process yet.
        guard let pidfdOpen = Self.pidfdOpen else { throw TestSupportError("pidfd_open is missing: glibc 2.36 needed") }
        let pidfd = pidfdOpen(pid, 0)
        guard pidfd >= 0 else {
            _ = kill(pid, SIGKILL)
            throw TestSupportError("pidfd_open: \(String(cString: strerror(errno)))")
        }
        self.processIdentifier = pid
        self.pidfd = pidfd
    }

    deinit {
        close(self.pidfd)
    }

    /// Whether the program is still running (it has not exited, or was not reaped yet).
    package var isRunning: Bool {
        self.status.withLock { status in
            if status != nil { return false }
            var raw: Int32 = 0
            let reaped = waitpid(self.processIdentifier, &raw, WNOHANG)
            if reaped == self.processIdentifier {
                // Like Foundation: the exit code, or the number of the signal that ended it.
                let signal = raw & 0x7f
                status = signal == 0 ? (raw >> 8) & 0xff : signal
                return false
            }
            if reaped < 0 && errno != EINTR {
                status = -1
                return false
            }
            return true
        }
    }

    /// The exit code, or the number of the signal that ended the program; -1 while it is still running.
    package var terminationStatus: Int32 {
        guard !self.isRunning else { return -1 }
        return self.status.withLock { $0 ?? -1 }
    }

    /// Sends `signal` to the program, unless it was already reaped (its process ID may belong to another by then).
    package func signal(_ signal: Int32) {
        self.status.withLock { status in
            if status == nil { _ = kill(self.processIdentifier, signal) }
        }
    }

    /// Sends SIGTERM.
    package func terminate() {
        self.signal(SIGTERM)
    }

    /// Waits for the program to exit (its pidfd turns readable) and returns its `terminationStatus`; sends SIGKILL and
    /// throws after `timeout`, a hang guard.
    @discardableResult
    package func exit(within timeout: Duration = hangGuard) async throws -> Int32 {
        if self.isRunning {
            guard await awaitReadable(self.pidfd, until: ContinuousClock.now + timeout), !self.isRunning else {
                self.signal(SIGKILL)
                throw TestSupportError("process \(self.processIdentifier) did not exit within \(timeout)")
            }
        }
        return self.terminationStatus
    }

    /// `exit(within:)` for a program that ends at once (a shell that writes a file): blocks the calling thread until
    /// it exits, or kills it after `timeout`, a hang guard; returns its `terminationStatus`.
    package func waitUntilExit(timeout: Duration = hangGuard) -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while self.isRunning {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                self.signal(SIGKILL)
                return -1
            }
            var poller = pollfd(fd: self.pidfd, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, Int32(clamping: remaining.components.seconds * 1000 + 1))
        }
        return self.terminationStatus
    }

    private static func check(_ result: Int32, _ what: String) throws {
        guard result == 0 else { throw TestSupportError("posix_spawn \(what): \(String(cString: strerror(result)))") }
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, which the Glibc module does not declare.
    private static let addCloseFrom: AddCloseFrom? = libcFunction("posix_spawn_file_actions_addclosefrom_np")

    private typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32

    /// glibc 2.36's `pidfd_open`, which the Glibc module does not declare either.
    private static let pidfdOpen: PidfdOpen? = libcFunction("pidfd_open")
}

/// A function of the C library that the Glibc module does not declare (it is not built with `_GNU_SOURCE`).
private func libcFunction<Function>(_ name: String) -> Function? {
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), name) else { return nil }
    return unsafeBitCast(symbol, to: Function.self)
}

/// A pipe whose ends are close-on-exec, so that only the program it is handed to (as a `SpawnedProcess.Stream`) gets
/// a copy. The test keeps its own end and closes the other once the program has started (`closeChildEnd`).
package final class ProcessPipe: Sendable {
    package let reading: FileHandle
    package let writing: FileHandle

    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    private static let pipe2: Pipe2? = libcFunction("pipe2")

    package init() throws {
        guard let pipe2 = Self.pipe2 else { throw TestSupportError("pipe2 is missing from the C library") }
        var descriptors: [Int32] = [-1, -1]
        guard pipe2(&descriptors, O_CLOEXEC) == 0 else {
            throw TestSupportError("pipe2: \(String(cString: strerror(errno)))")
        }
        self.reading = FileHandle(fileDescriptor: descriptors[0], closeOnDealloc: true)
        self.writing = FileHandle(fileDescriptor: descriptors[1], closeOnDealloc: true)
    }
}
