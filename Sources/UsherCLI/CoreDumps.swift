import CUsherLinux

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Keeps what the CLI holds (a password read from the terminal, a token on its way to stdout, an API key) out of core
/// files, and gives the programs it starts the core limit they would have had without it.
///
/// The soft core file size limit is set to 0 at start, as a user's `ulimit -c 0` would: the kernel writes no core
/// file, and a core handler that honours the limit (systemd-coredump) stores nothing. Not `PR_SET_DUMPABLE`, as usherd
/// does: a non-dumpable process's `/proc/PID/exe` is closed to usherd, which identifies the CLI by it for
/// `[[access.rule]]`s. The hard limit is left alone, so that the soft limit can go back up while the CLI starts a
/// program (`usher exec`, `usher inhibit`, the browser, git and kubectl in the setup commands), which inherits it. None
/// of those moments holds a secret: `usher exec` has put its token in the environment it hands over anyway.
enum CoreDumps {
    /// The soft limit the CLI was started with; nil when it could not be read or lowered (a kernel or a seccomp filter
    /// without prlimit), in which case there is nothing to give back.
    private static let inherited: UInt64? = {
        var previous: UInt64 = 0
        return usher_set_core_soft_limit(0, &previous) == 0 ? previous : nil
    }()

    /// Turns core files off for this process; first thing in `main`, before any secret is read.
    static func turnOff() {
        _ = Self.inherited
    }

    /// Runs `start` (a `posix_spawn`, or an `execve` that replaces this process) with the inherited limit back in
    /// place, so that the program started has it; core files are off again once `start` returns.
    static func restored<Result>(whileStarting start: () -> Result) -> Result {
        guard let inherited = Self.inherited, inherited != 0 else { return start() }
        _ = usher_set_core_soft_limit(inherited, nil)
        defer { _ = usher_set_core_soft_limit(0, nil) }
        return start()
    }

    /// Runs `start`, which starts a program through swift-subprocess and waits for it, with the inherited limit back
    /// in place until the program has started: the body `start` gives swift-subprocess calls `started()` first thing,
    /// and core files are off again at the latest when `start` returns or throws. The CLI may hold a secret while the
    /// program runs (git's request, with the token git refused, while `git config` runs): the limit is up for the
    /// start alone.
    static func inheritedUntilStarted<Result>(_ start: () async throws -> Result) async rethrows -> Result {
        guard let inherited = Self.inherited, inherited != 0 else { return try await start() }
        _ = usher_set_core_soft_limit(inherited, nil)
        defer { Self.started() }
        return try await start()
    }

    /// The program `inheritedUntilStarted(_:)` starts has started: core files are off again.
    static func started() {
        guard let inherited = Self.inherited, inherited != 0 else { return }
        _ = usher_set_core_soft_limit(0, nil)
    }
}
