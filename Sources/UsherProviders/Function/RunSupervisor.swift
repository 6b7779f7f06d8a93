import CUsherLinux

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The per-run supervisor of the authentication function: a process of its own between usherd and the command, so
/// that a run ends with every process it started, and with none of another run's.
///
/// It makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`): every orphan of the run (a grandchild that called
/// `setsid`, a daemon that forked twice) becomes its child instead of init's, whatever session or process group it
/// moved to. When the command exits, or usherd asks with SIGTERM (timeout, cancellation, too much output), or usherd
/// goes away, it kills its children with SIGKILL, reaps them, takes on and kills whatever they left behind, and exits
/// once it has no child left. Runs at once each have their own supervisor, so a run's end takes exactly its own
/// processes. usherd itself cannot be the subreaper: the orphans of concurrent runs would all land on it with nothing
/// left to tell whose they were (and a per-run cgroup needs systemd's delegation, which the unit does not have).
///
/// It is usherd itself, started as `usherd function-supervisor --parent PID -- COMMAND ARGS...`, because the
/// subreaper setting must be made by the process that is to receive the orphans, between fork and the command's exec,
/// and swift-subprocess runs no code there. The command gets the supervisor's standard streams and environment (both
/// exactly what usherd chose), `/` as its directory, default signal dispositions and an empty signal mask. The
/// command's end is passed on: the supervisor exits with the command's status, or dies of the command's signal
/// (without a core dump). A command that cannot be started is reported on stderr with status 127, as a shell does.
package enum RunSupervisor {
    /// The hidden `usherd` subcommand that runs a supervisor.
    package static let subcommand = "function-supervisor"

    /// Runs the command under supervision and exits as it did; never returns.
    package static func main(parent: pid_t, command: [String]) -> Never {
        guard usher_set_child_subreaper() == 0 else { Self.fail("cannot become a subreaper", errno) }
        Self.installSignalHandlers()
        // usherd may have gone already, before we could notice; then there is nothing to run for.
        guard getppid() == parent else { exit(125) }
        guard let child = Self.spawn(command) else { exit(127) }

        var commandStatus: Int32?
        var stopRequested = false
        while commandStatus == nil && !stopRequested && getppid() == parent {
            Self.reapExited(command: child, status: &commandStatus)
            guard commandStatus == nil else { break }
            // Woken by a signal's byte on the pipe, or each second to notice that usherd is gone.
            var wake = pollfd(fd: wakeDescriptors.read, events: Int16(POLLIN), revents: 0)
            if poll(&wake, 1, 1000) > 0 {
                var bytes = [UInt8](repeating: 0, count: 64)
                let count = read(wakeDescriptors.read, &bytes, bytes.count)
                if count > 0 && bytes[..<count].contains(where: { Int32($0) != SIGCHLD }) { stopRequested = true }
            }
        }
        Self.killEverything(command: child, status: &commandStatus)
        Self.finish(like: commandStatus)
    }

    /// Kills and reaps every descendant: children are killed and reaped, which makes their children ours, until
    /// none is left. Only direct children are signalled: they are not reaped until we reap them, so their process
    /// IDs cannot have been reused by an unrelated process.
    static func killEverything(command: pid_t, status: inout Int32?) {
        var unseen = 0
        while true {
            Self.reapExited(command: command, status: &status)
            let children = Self.children(of: getpid())
            if children.isEmpty {
                var raw: Int32 = 0
                let reaped = waitpid(-1, &raw, WNOHANG)
                if reaped < 0 && errno == ECHILD { return }
                if reaped == command { status = raw }
                // A child /proc did not list yet (it was just handed to us): look again, for a while. One /proc never
                // shows (another user's, behind hidepid) cannot be killed by us; do not wait for it for ever.
                if reaped == 0 {
                    unseen += 1
                    if unseen > 1000 {
                        Self.report("a process of the run cannot be seen in /proc; leaving it", ESRCH)
                        return
                    }
                    _ = poll(nil, 0, 2)
                }
                continue
            }
            unseen = 0
            for child in children { kill(child, SIGKILL) }
            var raw: Int32 = 0
            // At least one of them is dying now; a signal interrupts the wait, and the loop looks again.
            if waitpid(-1, &raw, 0) == command { status = raw }
        }
    }

    private static func reapExited(command: pid_t, status: inout Int32?) {
        while true {
            var raw: Int32 = 0
            let reaped = waitpid(-1, &raw, WNOHANG)
            guard reaped > 0 else { return }
            if reaped == command { status = raw }
        }
    }

    /// The processes whose parent is `parent`, from `/proc/PID/stat` (the 4th field). `/proc/PID/task/TID/children`
    /// would be cheaper, but not every kernel has it (`CONFIG_PROC_CHILDREN`).
    static func children(of parent: pid_t) -> [pid_t] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var result: [pid_t] = []
        while let entry = readdir(directory) {
            let pid = withUnsafeBytes(of: entry.pointee.d_name) { name -> pid_t? in
                pid_t(String(decoding: name.prefix { $0 != 0 }, as: UTF8.self))
            }
            if let pid, Self.parent(of: pid) == parent { result.append(pid) }
        }
        return result
    }

    private static func parent(of pid: pid_t) -> pid_t? {
        let descriptor = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = read(descriptor, &bytes, bytes.count)
        // "PID (COMMAND) STATE PPID ...": the command may hold spaces and parentheses, so start after the last ')'.
        guard count > 0, let close = bytes[..<count].lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = bytes[(close + 1)..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1 else { return nil }
        return pid_t(String(decoding: fields[1], as: UTF8.self))
    }

    /// Starts the command with `posix_spawn` (it is not a shell): see the type's documentation.
    private static func spawn(_ command: [String]) -> pid_t? {
        guard let executable = command.first else { Self.fail("no command", EINVAL, exitStatus: nil) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The wake-up pipe is close-on-exec already; whatever else the runtime opened must not reach the command.
        if let closeFrom = SpawnExtensions.addCloseFrom { _ = closeFrom(&actions, 3) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard result == 0 else {
            Self.report("cannot start \(executable)", result)
            return nil
        }
        return pid
    }

    /// Leaves as the command did: its exit status, or death by its signal (core dumps off, so that a crashing
    /// command does not leave a dump of the supervisor as well).
    private static func finish(like status: Int32?) -> Never {
        guard let status else { exit(124) }
        let number = status & 0x7F
        guard number != 0 else { exit((status >> 8) & 0xFF) }
        _ = usher_set_not_dumpable()
        _ = signal(number, SIG_DFL)
        var only = sigset_t()
        sigemptyset(&only)
        sigaddset(&only, number)
        sigprocmask(SIG_UNBLOCK, &only, nil)
        // raise, not kill(getpid()): the signal must hit this thread now, not another one while we go on to exit.
        raise(number)
        exit(128 + number)
    }

    // MARK: Signals

    private static func installSignalHandlers() {
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else { Self.fail("cannot make a pipe", errno) }
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        }
        wakeDescriptors = (descriptors[0], descriptors[1])
        var action = sigaction()
        action.__sigaction_handler.sa_handler = supervisorSignalHandler
        sigemptyset(&action.sa_mask)
        // No SA_RESTART: a signal interrupts poll and waitpid, and the loops look at once.
        action.sa_flags = 0
        for number in [SIGCHLD, SIGTERM, SIGINT, SIGHUP] { sigaction(number, &action, nil) }
    }

    private static func report(_ message: String, _ code: Int32) {
        let line = "usherd \(Self.subcommand): \(message): \(String(cString: strerror(code)))\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    }

    private static func fail(_ message: String, _ code: Int32, exitStatus: Int32? = 126) -> Never {
        Self.report(message, code)
        exit(exitStatus ?? 127)
    }
}

/// The wake-up pipe of the supervisor's signal handler: written once, before any handler is installed.
nonisolated(unsafe) private var wakeDescriptors: (read: Int32, write: Int32) = (-1, -1)

/// Writes the signal's number to the wake-up pipe (async-signal-safe: write only, errno preserved).
private func supervisorSignalHandler(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(wakeDescriptors.write, &byte, 1)
    errno = saved
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np`, looked up at run time: Swift's Glibc module does not declare it
/// (it needs `_GNU_SOURCE`), and C libraries before glibc 2.34 do not have it (then only close-on-exec protects).
private enum SpawnExtensions {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    static let addCloseFrom: AddCloseFrom? = {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else { return nil }
        return unsafeBitCast(address, to: AddCloseFrom.self)
    }()
}
