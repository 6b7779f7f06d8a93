import CSystemd
import CUsherLinux
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Identifies the program at the other end of a new connection: its executable and, under systemd, its units.
///
/// Once per connection, when it is accepted, before its first request is read; the work that touches `/proc` runs
/// on a thread pool's thread, never on the event loop. Race-free: the process is pinned with a pidfd first
/// (`SO_PEERPIDFD`, which the kernel takes when the peer connects; on kernels before 6.5, `pidfd_open` on the
/// `SO_PEERCRED` pid, accepted only if that process started before the connection was accepted), everything is read
/// through its pid, and the result counts only if the pinned process is still running afterwards (while it runs, its
/// pid cannot name another process).
package enum ProgramIdentifier {
    /// `peer` with its program identified (`PeerCredentials.program`); the executable's digest too when a rule in
    /// force asks for digests (`digests.wanted`). Fails only when the thread pool has stopped (the daemon stops).
    static func identify(
        _ peer: PeerCredentials,
        of channel: any Channel,
        digests: ExecutableDigests,
        pool: NIOThreadPool = .singleton
    ) -> EventLoopFuture<PeerCredentials> {
        let acceptedAt = Self.bootTicks()
        let pin: EventLoopFuture<Pin>
        if let provider = channel as? any SocketOptionProvider, peer.pid > 0 {
            let option: EventLoopFuture<CInt> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET),
                name: SocketOptionName(usher_so_peerpidfd)
            )
            pin = option.map { $0 >= 0 ? .pidfd($0) : .failed }.recover { error in
                // Only a kernel without SO_PEERPIDFD falls back to pidfd_open: any other failure (the peer is
                // gone) leaves the peer unidentified, as its pid may already be another process's.
                (error as? IOError)?.errnoCode == ENOPROTOOPT ? .unsupported : .failed
            }
        } else {
            pin = channel.eventLoop.makeSucceededFuture(.failed)
        }
        return pin.flatMap { pin in
            let identified = pool.runIfActive(eventLoop: channel.eventLoop) {
                let identity = Self.identity(pid: peer.pid, pin: pin, acceptedAt: acceptedAt)
                let program = PeerProgram(identity: identity, pid: peer.pid, roster: digests)
                if digests.enlist(program) { digests.computeDigest(for: program) }
                var peer = peer
                peer.program = program
                return peer
            }
            identified.whenFailure { _ in if case .pidfd(let pidfd) = pin { close(pidfd) } }
            return identified
        }
    }

    /// How the peer's process is pinned.
    package enum Pin: Sendable {
        /// `SO_PEERPIDFD`'s pidfd.
        case pidfd(CInt)
        /// The kernel has no `SO_PEERPIDFD`: `pidfd_open` on the pid, with a check that it is the same process.
        case unsupported
        /// The peer cannot be pinned.
        case failed
    }

    /// What can be found out about process `pid`. Blocking (it reads `/proc`): on a thread pool's thread. Closes
    /// the pin's pidfd.
    package static func identity(pid: Int32, pin: Pin, acceptedAt: UInt64) -> ProgramIdentity {
        let pinned: CInt
        switch pin {
        case .pidfd(let pidfd):
            pinned = pidfd
        case .failed:
            return .unidentified
        case .unsupported:
            guard pid > 0 else { return .unidentified }
            pinned = usher_pidfd_open(pid)
            guard pinned >= 0 else { return .unidentified }
            // pidfd_open pins whatever process has the pid now: the peer's only if it was already running when the
            // connection was accepted (a process that took over a dead peer's pid started later).
            guard let started = Self.startTicks(of: pid), started <= acceptedAt else {
                close(pinned)
                return .unidentified
            }
        }
        defer { close(pinned) }
        let executable = Self.executable(of: pid)
        let file = ExecutableFile(path: "/proc/\(pid)/exe")
        let unit = Self.unit(of: pid, usher_sd_pid_get_unit)
        let userUnit = Self.unit(of: pid, usher_sd_pid_get_user_unit)
        // Everything above was read through the pid: it was the pinned process's only if that still runs now.
        guard usher_pidfd_is_running(pinned) == 1, let executable, let file else { return .unidentified }
        return ProgramIdentity(identified: true, executable: executable, file: file, unit: unit, userUnit: userUnit)
    }

    /// `/proc/PID/exe`; nil when it cannot be read (another user's process to a daemon without the right to see it,
    /// a process that is gone). A deleted executable reads as its old path with " (deleted)" appended.
    static func executable(of pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func unit(
        of pid: Int32,
        _ lookup: (pid_t, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt
    ) -> String? {
        var name: UnsafeMutablePointer<CChar>?
        guard lookup(pid, &name) >= 0, let name else { return nil }
        defer { free(name) }
        return String(cString: name)
    }

    /// Now, in clock ticks since boot (`CLOCK_BOOTTIME`, the clock of a process's start time in `/proc/PID/stat`).
    package static func bootTicks() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        let hertz = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        return UInt64(now.tv_sec) * hertz + UInt64(now.tv_nsec) * hertz / 1_000_000_000
    }

    /// When process `pid` started, in clock ticks since boot: field 22 of `/proc/PID/stat`, counted after the
    /// command name's closing parenthesis (the name itself may hold spaces and parentheses).
    static func startTicks(of pid: Int32) -> UInt64? {
        let descriptor = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0, let end = buffer[..<count].lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // After ") ": field 3 (state) onwards; the start time is field 22, the 20th of those.
        let fields = buffer[(end + 1)..<count].split(separator: UInt8(ascii: " "))
        guard fields.count >= 20 else { return nil }
        return UInt64(String(decoding: fields[19], as: UTF8.self))
    }
}
