import CUsherLinux

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the daemon does to its own process before it holds any secret.
package enum ProcessHardening {
    /// Keeps the daemon's memory (passwords being hashed, tokens, the signing key) out of core dumps and away from
    /// other processes of its user.
    ///
    /// `PR_SET_DUMPABLE 0`: the kernel writes no core file, and processes of the same uid can no longer attach with
    /// ptrace or read `/proc/PID/mem`, `environ` and the like (those files become root's). The core size limit is set
    /// to 0 as well, so that a core handler that honours it (systemd-coredump) stores nothing even where
    /// `fs.suid_dumpable=2` would dump non-dumpable processes for root; under the shipped units, whose system-call
    /// filter refuses `setrlimit`, `LimitCORE=0` does the same. Programs the daemon starts (the function hook) are
    /// dumpable again after `execve`, as the kernel decides.
    ///
    /// - Returns: a warning to print when the process could not be made non-dumpable, else nil.
    package static func disableCoreDumps() -> String? {
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        if getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit) == 0 {
            limit.rlim_cur = 0
            limit.rlim_max = 0
            _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        }
        guard usher_set_not_dumpable() == 0 else {
            return "cannot turn core dumps off (prctl PR_SET_DUMPABLE): \(String(cString: strerror(errno)))"
        }
        return nil
    }

    /// Whether the process is dumpable now (`PR_GET_DUMPABLE`).
    package static var isDumpable: Bool { usher_is_dumpable() != 0 }
}
