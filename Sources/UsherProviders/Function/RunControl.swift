import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Stops one run of the authentication function from any thread, at once: cancellation and the deadline signal the
/// run's supervisor straight from the thread that notices them (the canceller's, a timer's), never waiting for a
/// thread of Swift's cooperative pool, which a busy process may not have free for seconds.
///
/// The supervisor's process ID is held only while it cannot have been reaped: from the moment swift-subprocess hands
/// the running process over until the run's reading is done (swift-subprocess reaps it only after that). Signals are
/// sent under the lock, so a stop can never reach a process ID that has been reused by someone else.
final class RunControl: Sendable {
    private struct State {
        var supervisor: pid_t?
        var finished = false
        /// Why the run was stopped, by whoever stopped it first.
        var reason: HookProcess.Ending?
    }

    private let state = Mutex(State())

    /// Why the run was stopped early (`.timedOut`, `.outputTooLarge`, `.cancelled`), if it was.
    var reason: HookProcess.Ending? { self.state.withLock { $0.reason } }

    /// The supervisor is running: from now on a stop signals it. A stop that came before is carried out now.
    func attach(_ supervisor: pid_t) {
        self.state.withLock { state in
            state.supervisor = supervisor
            if state.reason != nil { kill(supervisor, SIGTERM) }
        }
    }

    /// The run's output has been read to its end (the supervisor is exiting or gone): nothing is signalled any more.
    func finish() {
        self.state.withLock { state in
            state.supervisor = nil
            state.finished = true
        }
    }

    /// Asks the supervisor to kill the run (SIGTERM; it kills everything the command started, then exits), unless
    /// the run was stopped already or is over.
    ///
    /// - Parameter unlessExited: leave a supervisor that has already exited alone: a deadline that passes while the
    ///   last output is still being read is not a timeout.
    func stop(_ reason: HookProcess.Ending, unlessExited: Bool = false) {
        let stopped = self.state.withLock { state -> Bool in
            guard state.reason == nil, !state.finished else { return false }
            if let supervisor = state.supervisor {
                if unlessExited && Self.hasExited(supervisor) { return false }
                kill(supervisor, SIGTERM)
            }
            state.reason = reason
            return true
        }
        // A supervisor that has not gone within the grace period (a process of the run stuck in the kernel) is
        // killed itself, so that the login ends. (On cancellation swift-subprocess's teardown does the same.)
        guard stopped else { return }
        DispatchQueue.global().asyncAfter(
            deadline: .now() + .seconds(Int(HookProcess.supervisorGrace.components.seconds))
        ) {
            self.state.withLock { state in
                if let supervisor = state.supervisor { kill(supervisor, SIGKILL) }
            }
        }
    }

    /// Whether `pid`, a child not reaped yet, has exited (it is left waitable).
    private static func hasExited(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else { return true }
        // With WNOHANG and nothing to report, the zeroed structure stays zeroed.
        return info.si_signo == SIGCHLD
    }
}
