import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One run of an external command with bounded time and output: the engine under the local provider's custom
/// authentication function.
///
/// The command is started with `posix_spawn` (no shell), in a process group of its own, with exactly the
/// environment given, `/` as its working directory, default signal dispositions, an empty signal mask, and no
/// descriptors of the daemon but its three standard streams. Standard input is a socket pair (so that writing to a
/// command that exits without reading raises no `SIGPIPE` in the daemon); output and errors are pipes.
///
/// `run` blocks its thread while the command runs (a `poll` loop) and must therefore be called on a thread of its
/// own, never on an event loop or the cooperative pool: `HookProcess.start` does that.
enum HookProcess {
    /// How a run ended.
    enum Ending: Sendable, Equatable {
        /// The command exited with this status.
        case exited(Int32)
        /// The command was killed by this signal (it crashed, or someone killed it).
        case signaled(Int32)
        /// The time limit passed; the process group was killed.
        case timedOut
        /// Standard output grew past the limit; the process group was killed.
        case outputTooLarge
        /// The run was cancelled (the request went away); the process group was killed.
        case cancelled
        /// `posix_spawn` failed with this errno (no such file, not executable...).
        case notStarted(Int32)
    }

    struct Outcome: Sendable {
        var ending: Ending
        var output: [UInt8]
        /// The first `errorLimit` bytes of standard error.
        var errors: [UInt8]
    }

    /// A flag the run polls, so that a cancelled request stops the command promptly.
    final class Cancellation: Sendable {
        private let flag = Atomic<Bool>(false)
        func cancel() { self.flag.store(true, ordering: .releasing) }
        var isCancelled: Bool { self.flag.load(ordering: .acquiring) }
    }

    /// Runs the command on a new thread and returns when it has ended; cancelling the task kills it.
    static func start(
        arguments: [String],
        environment: [String: String],
        input: [UInt8],
        timeout: Duration,
        outputLimit: Int,
        errorLimit: Int
    ) async -> Outcome {
        let cancellation = Cancellation()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                // A thread per run, not a Dispatch queue: the run blocks for up to `timeout`, and the number of runs
                // at once is bounded by the caller (`max_concurrent`).
                let thread = Thread {
                    continuation.resume(
                        returning: Self.run(
                            arguments: arguments,
                            environment: environment,
                            input: input,
                            timeout: timeout,
                            outputLimit: outputLimit,
                            errorLimit: errorLimit,
                            cancellation: cancellation
                        )
                    )
                }
                thread.name = "usher-function"
                thread.start()
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    /// Runs the command to its end on the calling thread. See the type's documentation.
    static func run(
        arguments: [String],
        environment: [String: String],
        input: [UInt8],
        timeout: Duration,
        outputLimit: Int,
        errorLimit: Int,
        cancellation: Cancellation
    ) -> Outcome {
        let deadline = ContinuousClock.now + timeout
        guard let executable = arguments.first else {
            return Outcome(ending: .notStarted(ENOENT), output: [], errors: [])
        }

        // Our ends are close-on-exec and non-blocking; the child's ends become its 0, 1 and 2 (dup2 clears
        // close-on-exec on the copies).
        var inputPair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &inputPair) == 0
        else { return Outcome(ending: .notStarted(errno), output: [], errors: []) }
        var outputPipe: [Int32] = [-1, -1]
        var errorPipe: [Int32] = [-1, -1]
        guard pipe(&outputPipe) == 0 else {
            let error = errno
            for fd in inputPair { _ = close(fd) }
            return Outcome(ending: .notStarted(error), output: [], errors: [])
        }
        guard pipe(&errorPipe) == 0 else {
            let error = errno
            for fd in inputPair + outputPipe { _ = close(fd) }
            return Outcome(ending: .notStarted(error), output: [], errors: [])
        }
        // (pipe2 with O_CLOEXEC is not in Swift's Glibc module. The short window before these calls does not
        // matter: every command started here closes all descriptors from 3 up.)
        for fd in outputPipe + errorPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        let spawned = Self.spawn(
            executable: executable,
            arguments: arguments,
            environment: environment,
            stdin: inputPair[1],
            stdout: outputPipe[1],
            stderr: errorPipe[1]
        )
        _ = close(inputPair[1])
        _ = close(outputPipe[1])
        _ = close(errorPipe[1])
        var inputFD: Int32 = inputPair[0]
        var outputFD: Int32 = outputPipe[0]
        var errorFD: Int32 = errorPipe[0]
        defer {
            for fd in [inputFD, outputFD, errorFD] where fd >= 0 { _ = close(fd) }
        }
        let pid: pid_t
        switch spawned {
        case .failure(let error):
            return Outcome(ending: .notStarted(error.code), output: [], errors: [])
        case .success(let value):
            pid = value
        }
        for fd in [inputFD, outputFD, errorFD] {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }

        var output: [UInt8] = []
        var errors: [UInt8] = []
        var written = 0
        // Whether the command has exited. It is detected without reaping it (WNOWAIT): until it is reaped its process
        // ID cannot be reused, so killing its group afterwards can never hit an unrelated process.
        var exited = false
        var buffer = [UInt8](repeating: 0, count: 16_384)

        /// Kills the whole group (the command and anything it started), reaps the command, and ends the run.
        func killed(_ ending: Ending) -> Outcome {
            _ = kill(-pid, SIGKILL)
            _ = Self.reap(pid)
            return Outcome(ending: ending, output: output, errors: errors)
        }

        if input.isEmpty {
            _ = close(inputFD)
            inputFD = -1
        }
        while true {
            if cancellation.isCancelled { return killed(.cancelled) }
            if !exited { exited = Self.hasExited(pid) }
            if exited && outputFD < 0 && errorFD < 0 { break }
            let remaining = deadline - ContinuousClock.now
            if remaining <= .zero { return killed(.timedOut) }

            var descriptors: [pollfd] = []
            if inputFD >= 0 { descriptors.append(pollfd(fd: inputFD, events: Int16(POLLOUT), revents: 0)) }
            if outputFD >= 0 { descriptors.append(pollfd(fd: outputFD, events: Int16(POLLIN), revents: 0)) }
            if errorFD >= 0 { descriptors.append(pollfd(fd: errorFD, events: Int16(POLLIN), revents: 0)) }
            // Once the command has exited, take what is already in the pipes and stop: a background process it left
            // behind may hold them open for ever. Until then, wake at least every 50 ms to notice the exit, the
            // deadline and cancellation.
            let (seconds, attoseconds) = remaining.components
            let remainingMilliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1
            let wait = exited ? 0 : Int32(min(50, remainingMilliseconds))
            let ready = poll(&descriptors, nfds_t(descriptors.count), wait)
            if ready < 0 {
                if errno == EINTR { continue }
                return killed(.timedOut)
            }
            if ready == 0 {
                if exited { break }
                continue
            }
            for descriptor in descriptors where descriptor.revents != 0 {
                if descriptor.fd == inputFD {
                    let count = input[written...].withUnsafeBytes { bytes in
                        send(inputFD, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                    }
                    if count > 0 { written += count }
                    // The command closed its input early (or the write failed): it has all it will read.
                    if count < 0 && errno != EAGAIN && errno != EINTR || written == input.count {
                        _ = close(inputFD)
                        inputFD = -1
                    }
                } else if descriptor.fd == outputFD {
                    let count = buffer.withUnsafeMutableBytes { read(outputFD, $0.baseAddress, $0.count) }
                    if count > 0 {
                        output.append(contentsOf: buffer[..<count])
                        if output.count > outputLimit { return killed(.outputTooLarge) }
                    } else if count == 0 || errno != EAGAIN && errno != EINTR {
                        _ = close(outputFD)
                        outputFD = -1
                    }
                } else if descriptor.fd == errorFD {
                    let count = buffer.withUnsafeMutableBytes { read(errorFD, $0.baseAddress, $0.count) }
                    if count > 0 {
                        // Kept up to the limit, the rest read and dropped so the command never blocks on it.
                        errors.append(contentsOf: buffer[..<min(count, max(0, errorLimit - errors.count))])
                    } else if count == 0 || errno != EAGAIN && errno != EINTR {
                        _ = close(errorFD)
                        errorFD = -1
                    }
                }
            }
        }
        // Anything the command left running in its group goes with it.
        _ = kill(-pid, SIGKILL)
        let status = Self.reap(pid)
        let signal = status & 0x7F
        let ending: Ending = signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
        return Outcome(ending: ending, output: output, errors: errors)
    }

    /// Reaps `pid`, which has exited or has just been sent SIGKILL (so this is short), and returns its wait status.
    private static func reap(_ pid: pid_t) -> Int32 {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        return raw
    }

    /// Whether `pid` has exited, leaving it waitable.
    private static func hasExited(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return false }
        // With WNOHANG and nothing to report, the zeroed structure stays zeroed.
        return info.si_signo == SIGCHLD
    }

    private struct SpawnError: Error {
        var code: Int32
    }

    private static func spawn(
        executable: String,
        arguments: [String],
        environment: [String: String],
        stdin: Int32,
        stdout: Int32,
        stderr: Int32
    ) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        Self.addCloseDescriptorsFrom3(&actions)
        if let addChdir = SpawnExtensions.addChdir {
            _ = "/".withCString { addChdir(&actions, $0) }
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        // The daemon ignores or handles some signals (SIGPIPE, SIGTERM, SIGHUP...); the command starts clean.
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        // Its own process group, so that a timeout kills whatever it started too.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes,
            Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP)
        )

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { return .failure(SpawnError(code: result)) }
        return .success(pid)
    }

    /// Makes the child close every descriptor from 3 up: the daemon's sockets and database must not leak into it,
    /// whether or not whoever opened them asked for close-on-exec.
    private static func addCloseDescriptorsFrom3(_ actions: inout posix_spawn_file_actions_t) {
        if let closeFrom = SpawnExtensions.addCloseFrom {
            _ = closeFrom(&actions, 3)
            return
        }
        // Without posix_spawn_file_actions_addclosefrom_np (glibc before 2.34): close what is open now.
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in open.compactMap({ Int32($0) }) where fd > 2 {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
    }
}

/// glibc's posix_spawn extensions, looked up at run time: Swift's Glibc module does not declare them (they need
/// `_GNU_SOURCE`), and older C libraries do not have them.
private enum SpawnExtensions {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias AddChdir =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) ->
        Int32

    static let addCloseFrom: AddCloseFrom? = Self.symbol("posix_spawn_file_actions_addclosefrom_np")
    static let addChdir: AddChdir? = Self.symbol("posix_spawn_file_actions_addchdir_np")

    private static func symbol<T>(_ name: String) -> T? {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(address, to: T.self)
    }
}
