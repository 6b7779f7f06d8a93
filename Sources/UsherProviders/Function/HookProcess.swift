import Dispatch
import Subprocess
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One run of an external command with bounded time and output: the engine under the local provider's custom
/// authentication function.
///
/// swift-subprocess starts the run's supervisor (`RunSupervisor`: usherd itself in a hidden mode, in a process group
/// of its own, with exactly the environment given, `/` as its directory and no descriptor of the daemon's but the
/// three pipes: it closes the others in the child, without the race of listing `/proc/self/fd`), and the supervisor
/// starts the command. Standard input carries `input`; standard output and error are read as they come.
///
/// A run ends in one of three ways, and in each the supervisor kills every process the command started, wherever it
/// went (`setsid` included), before it exits: the command exits; the time limit passes or the output grows past its
/// limit; or the calling task is cancelled. The last two send SIGTERM to the supervisor at once, from whichever thread
/// notices (`RunControl`); swift-subprocess's teardown follows up with SIGKILL if the supervisor has not gone within
/// `supervisorGrace`. The run returns only once the supervisor has exited, and the supervisor exits only once it has
/// reaped every process of the run.
enum HookProcess {
    /// How a run ended.
    enum Ending: Sendable, Equatable {
        /// The command exited with this status.
        case exited(Int32)
        /// The command was killed by this signal (it crashed, or someone killed it).
        case signaled(Int32)
        /// The time limit passed; the run was killed.
        case timedOut
        /// Standard output grew past the limit; the run was killed.
        case outputTooLarge
        /// The run was cancelled (the request went away); the run was killed.
        case cancelled
        /// The command or its supervisor could not be started (this errno: no such file, not executable...).
        case notStarted(Int32)
    }

    struct Outcome: Sendable {
        var ending: Ending
        var output: [UInt8]
        /// The first `errorLimit` bytes of standard error.
        var errors: [UInt8]
    }

    /// How long the supervisor may take to kill a run and exit after SIGTERM before it is killed itself. It needs
    /// milliseconds; only a process stuck in the kernel (uninterruptible sleep) can hold it up.
    static let supervisorGrace: Duration = .seconds(10)

    /// Runs `arguments` (an absolute path and its arguments) under a supervisor and returns when the run has ended.
    ///
    /// - Parameter supervisor: the `usherd` executable that provides the supervisor (`/proc/self/exe` in the daemon).
    static func start(
        arguments: [String],
        supervisor: String,
        environment: [String: String],
        input: [UInt8],
        timeout: Duration,
        outputLimit: Int,
        errorLimit: Int
    ) async -> Outcome {
        guard let executable = arguments.first else {
            return Outcome(ending: .notStarted(ENOENT), output: [], errors: [])
        }
        // The supervisor would report these only as status 127; found here, they get their own message.
        if let problem = Self.problemStarting(executable) {
            return Outcome(ending: .notStarted(problem), output: [], errors: [])
        }
        Self.ignoreBrokenPipes
        var options = PlatformOptions()
        // Its own process group: a Ctrl-C meant for a usherd in a terminal does not reach the run.
        options.processGroupID = 0
        // After our own SIGTERM on cancellation, swift-subprocess's teardown: SIGTERM again, then SIGKILL if the
        // supervisor has not gone within the grace period.
        options.teardownSequence = [.gracefulShutDown(allowedDurationToNextStep: Self.supervisorGrace)]
        var variables: [Environment.Key: String] = [:]
        for (name, value) in environment { variables[Environment.Key(stringLiteral: name)] = value }
        let control = RunControl()
        // The deadline is kept by a Dispatch timer, not a task: it fires on time however busy the cooperative pool.
        let deadline = DispatchWorkItem { control.stop(.timedOut, unlessExited: true) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Self.nanoseconds(timeout)), execute: deadline)
        defer { deadline.cancel() }
        do {
            let result = try await withTaskCancellationHandler {
                try await Subprocess.run(
                    .path(FilePath(supervisor)),
                    arguments: Arguments(
                        executablePathOverride: "usherd",
                        remainingValues: [RunSupervisor.subcommand, "--parent", "\(getpid())", "--"] + arguments
                    ),
                    environment: .custom(variables),
                    workingDirectory: "/",
                    platformOptions: options,
                    // Written by `read`, not as `.array(input)`: swift-subprocess 1.0.2 leaves an array input's pipe
                    // unclosed (a fatal error in its descriptor's deinit) when the process exits before the writing
                    // task has finished. With `.inputWriter` it closes the pipe itself when the body returns.
                    input: .inputWriter,
                    output: .sequence,
                    error: .sequence
                ) { execution in
                    control.attach(execution.processIdentifier.value)
                    defer { control.finish() }
                    return await Self.exchange(
                        execution,
                        input: input,
                        control: control,
                        outputLimit: outputLimit,
                        errorLimit: errorLimit
                    )
                }
            } onCancel: {
                // On the cancelling thread, at once.
                control.stop(.cancelled)
            }
            let ending: Ending
            switch (control.reason, result.terminationStatus) {
            case (let reason?, _): ending = reason
            case (nil, .exited(let code)): ending = .exited(code)
            case (nil, .signaled(let signal)): ending = .signaled(signal)
            }
            return Outcome(ending: ending, output: result.closureResult.output, errors: result.closureResult.errors)
        } catch {
            let code = (error as? SubprocessError)?.underlyingError?.rawValue ?? EIO
            return Outcome(ending: control.reason ?? .notStarted(code), output: [], errors: [])
        }
    }

    /// Writes `input` to the run and reads its output and error streams to their end, which comes when the supervisor
    /// has exited (it holds them open itself until then); stops the run when the output grows past its limit.
    private static func exchange(
        _ execution: Execution<CustomWriteInput, SequenceOutput, SequenceOutput>,
        input: [UInt8],
        control: RunControl,
        outputLimit: Int,
        errorLimit: Int
    ) async -> (output: [UInt8], errors: [UInt8]) {
        async let written: Void = {
            // A command that exits without reading it all makes the write fail (EPIPE): that is its business.
            _ = try? await execution.standardInputWriter.write(input)
            try? await execution.standardInputWriter.finish()
        }()
        async let errors = Self.collect(execution.standardError, keeping: errorLimit)
        var output: [UInt8] = []
        do {
            for try await buffer in execution.standardOutput where output.count <= outputLimit {
                buffer.withUnsafeBytes { output.append(contentsOf: $0) }
                // What the command still writes is read and dropped until the supervisor is gone.
                if output.count > outputLimit { control.stop(.outputTooLarge) }
            }
        } catch {
            // Reading ends early only when the run is torn down; keep what was read.
        }
        await written
        return (output, await errors)
    }

    private static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }

    /// Reads `stream` to its end, keeping its first `limit` bytes: the rest is read and dropped so that the command
    /// never blocks on a full pipe.
    private static func collect(_ stream: SubprocessOutputSequence, keeping limit: Int) async -> [UInt8] {
        var kept: [UInt8] = []
        do {
            for try await buffer in stream where kept.count < limit {
                buffer.withUnsafeBytes { kept.append(contentsOf: $0.prefix(limit - kept.count)) }
            }
        } catch {
            // Torn down: keep what was read.
        }
        return kept
    }

    /// Why `executable` cannot be started (an errno), or nil when it looks startable.
    private static func problemStarting(_ executable: String) -> Int32? {
        guard executable.hasPrefix("/") else { return ENOENT }
        var info = stat()
        guard stat(executable, &info) == 0 else { return errno }
        guard info.st_mode & S_IFMT == S_IFREG else { return EACCES }
        return access(executable, X_OK) == 0 ? nil : errno
    }

    /// Writing a payload to a command that exits without reading it must fail with EPIPE, not kill the daemon with
    /// SIGPIPE (SwiftNIO ignores SIGPIPE too, once it has made a socket). Commands start with the default action.
    private static let ignoreBrokenPipes: Void = {
        _ = signal(SIGPIPE, SIG_IGN)
    }()
}
