import CSystemd
import Glibc

/// What systemd-logind knows about seats and sessions, through libsystemd's sd-login (which reads logind's state
/// files under /run/systemd: no D-Bus round trip). Used with `[seats] source = "logind"`.
enum Logind {
    /// The seat of the logind session a process belongs to; nil when it is in no session, or its session has no
    /// seat (an ssh login), or logind is not running.
    ///
    /// Asked once per connection, with the pid the kernel gave for the peer at `connect` (`SO_PEERCRED`): that is
    /// what `sd_peer_get_session` does with the socket, and the pid is already at hand.
    static func seat(ofPID pid: Int32) -> String? {
        guard pid > 0 else { return nil }
        var session: UnsafeMutablePointer<CChar>?
        guard usher_sd_pid_get_session(pid, &session) >= 0, let session else { return nil }
        defer { free(session) }
        return self.seat(ofSession: session)
    }

    /// The seat of a logind session, by the session's id.
    static func seat(ofSession session: UnsafePointer<CChar>) -> String? {
        var seat: UnsafeMutablePointer<CChar>?
        guard usher_sd_session_get_seat(session, &seat) >= 0, let seat else { return nil }
        defer { free(seat) }
        return String(cString: seat)
    }

    /// The seats logind knows now; empty when logind is not running.
    static func seats() -> [String] {
        var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = usher_sd_get_seats(&list)
        guard count > 0, let list else { return [] }
        defer {
            for index in 0..<Int(count) { free(list[index]) }
            free(list)
        }
        return (0..<Int(count)).compactMap { list[$0].map { String(cString: $0) } }
    }

    /// Whether this process can read another user's `/proc/PID/cgroup` (pid 1's), which sd-login needs to find a
    /// peer's session. Root's own processes are always visible to root.
    static var canSeeOtherUsersProcesses: Bool { getuid() == 0 || access("/proc/1/cgroup", R_OK) == 0 }
}
