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
///
/// That the process still runs the program it connected from is shown by its end of the connection: the process must
/// hold it in a close-on-exec descriptor. No interface of the kernel tells when a process last `exec`ed (the start time
/// in `/proc/PID/stat` is the `fork`'s, and neither `SO_PEERPIDFD`'s pidfd nor `PIDFD_GET_INFO` counts `exec`s), and
/// `/proc/PID/exe` read at accept time is already the new program's when the peer `exec`s between its `connect` and
/// usherd's `accept`. But an `exec` closes every close-on-exec descriptor of the process, so a process that holds the
/// connection close-on-exec has not `exec`ed since it took that descriptor: the program found now is the one that
/// connected. A process that connected and then `exec`ed either lost the descriptor (it was close-on-exec) or holds
/// it without the flag (it was inherited): either way it is unidentified. The descriptor's number and the socket's
/// inode are kept, its `/proc/PID/fdinfo/FD` stays open (`ConnectionWatch`), and every check of a rule with program
/// conditions reads it again (`PeerProgram.isUnchanged`), so a program that `exec`s later loses what its rules gave it.
///
/// Which descriptor of the peer is the connection is asked of the kernel's socket diagnostics (`unix_diag`): the
/// socket of the peer's whose peer has this connection's `SO_COOKIE`.
package enum ProgramIdentifier {
    /// `peer` with its program identified (`PeerCredentials.program`); the executable's digest too when a rule in
    /// force asks for digests of this peer's programs (`ExecutableDigests`), computed on the digests' own threads so
    /// that no other connection waits for it. Fails only when the thread pool has stopped (the daemon stops).
    static func identify(
        _ peer: PeerCredentials,
        of channel: any Channel,
        digests: ExecutableDigests,
        pool: NIOThreadPool = ProgramIdentifier.pool
    ) -> EventLoopFuture<PeerCredentials> {
        let acceptedAt = Self.bootTicks()
        let pin: EventLoopFuture<Pin>
        let cookie: EventLoopFuture<UInt64?>
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
            let value: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET),
                name: SocketOptionName(usher_so_cookie)
            )
            cookie = value.map { Optional($0) }.recover { _ in nil }
        } else {
            pin = channel.eventLoop.makeSucceededFuture(.failed)
            cookie = channel.eventLoop.makeSucceededFuture(nil)
        }
        return pin.and(cookie).flatMap { pin, cookie in
            let identified = pool.runIfActive(eventLoop: channel.eventLoop) {
                let identity = Self.identity(pid: peer.pid, pin: pin, acceptedAt: acceptedAt, cookie: cookie)
                let owner = ProgramOwner(uid: peer.uid, gid: peer.gid, groups: peer.groups)
                return PeerProgram(identity: identity, pid: peer.pid, owner: owner, roster: digests)
            }
            identified.whenFailure { _ in if case .pidfd(let pidfd) = pin { close(pidfd) } }
            return identified.flatMap { program in
                var identifiedPeer = peer
                identifiedPeer.program = program
                let promise = channel.eventLoop.makePromise(of: PeerCredentials.self)
                digests.enlist(program) { [identifiedPeer] in promise.succeed(identifiedPeer) }
                return promise.futureResult
            }
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

    /// What can be found out about process `pid`, the peer of the connection whose `SO_COOKIE` is `cookie`.
    /// Blocking (it reads `/proc`): on a thread pool's thread. Closes the pin's pidfd.
    package static func identity(pid: Int32, pin: Pin, acceptedAt: UInt64, cookie: UInt64?) -> ProgramIdentity {
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
        // The connection first: once it is found held close-on-exec, the executable read after it is the program
        // that connected (an exec in between would have closed the descriptor, and the second look below sees that).
        let connection = cookie.flatMap { Self.connection(of: pid, cookie: $0) }
        let executable = Self.executable(of: pid)
        let file = ExecutableFile(path: "/proc/\(pid)/exe")
        let unit = Self.unit(of: pid, usher_sd_pid_get_unit)
        let userUnit = Self.unit(of: pid, usher_sd_pid_get_user_unit)
        let namespaces = Self.namespaces(of: pid)
        // The descriptor's fdinfo, kept open for the checks to come (`PeerProgram.isUnchanged`): opened through the
        // pid before the pin is checked, so that it is the pinned process's.
        let watch = connection.flatMap { ConnectionWatch(pid: pid, held: $0) }
        // Everything above was read through the pid: it was the pinned process's only if that still runs now, and
        // the program it ran throughout only if the descriptor is still there, still close-on-exec.
        guard usher_pidfd_is_running(pinned) == 1, let executable, let file, let watch, watch.current() == watch.held
        else { return .unidentified }
        var status = stat()
        let executableIsPath =
            stat(executable, &status) == 0 && UInt64(status.st_dev) == file.device
            && UInt64(status.st_ino) == file.inode
        return ProgramIdentity(
            identified: true,
            executable: executable,
            file: file,
            unit: unit,
            userUnit: userUnit,
            executableIsPath: executableIsPath,
            hostMountNamespace: namespaces.mount,
            hostUserNamespace: namespaces.user,
            watch: watch
        )
    }

    /// Descriptors of a peer looked at, at most, for its end of the connection: a client has it among its first few.
    static let maximumDescriptorsSearched = 4096

    /// Identification's own threads, started once: never queued behind the process's other blocking work on NIO's
    /// shared pool (password hashing, a client's blocking connect; in the test process, that of every in-process
    /// server and client at once), which held new connections unidentified, and so unanswered, for minutes.
    static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        return pool
    }()

    /// The close-on-exec descriptor through which process `pid` holds the socket connected to the one whose
    /// `SO_COOKIE` is `cookie`; nil when it holds none, or not close-on-exec. The kernel names that socket's inode in
    /// one dump of the Unix sockets (`usher_unix_diag_peer_of_cookie`); the peer's descriptors are then only read
    /// (`readlink`), so a client holding thousands of sockets costs no more netlink round trips than one holding one.
    static func connection(of pid: Int32, cookie: UInt64) -> HeldConnection? {
        var peerInode: UInt32 = 0
        guard usher_unix_diag_peer_of_cookie(cookie, &peerInode) == 0, peerInode != 0 else { return nil }
        guard let directory = opendir("/proc/\(pid)/fd") else { return nil }
        defer { closedir(directory) }
        var searched = 0
        while let entry = readdir(directory), searched < Self.maximumDescriptorsSearched {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard let descriptor = Int32(name) else { continue }
            searched += 1
            guard Self.socketInode(descriptor, of: pid) == UInt64(peerInode) else { continue }
            // This is the connection; it counts only close-on-exec.
            let held = HeldConnection(descriptor: descriptor, inode: UInt64(peerInode))
            return Self.descriptor(descriptor, of: pid) == held ? held : nil
        }
        return nil
    }

    /// `socket:[INODE]` of `/proc/PID/fd/N`, or nil when it is not a socket.
    private static func socketInode(_ descriptor: Int32, of pid: Int32) -> UInt64? {
        var buffer = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/\(pid)/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let link = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard link.hasPrefix("socket:["), link.hasSuffix("]") else { return nil }
        return UInt64(link.dropFirst("socket:[".count).dropLast())
    }

    /// Descriptor `descriptor` of process `pid` as `/proc/PID/fdinfo` shows it, when it is close-on-exec (`flags`
    /// with `O_CLOEXEC`); nil when it is not, or is gone.
    static func descriptor(_ descriptor: Int32, of pid: Int32) -> HeldConnection? {
        let handle = open("/proc/\(pid)/fdinfo/\(descriptor)", O_RDONLY | O_CLOEXEC)
        guard handle >= 0 else { return nil }
        defer { close(handle) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 512) { buffer in
            let count = read(handle, buffer.baseAddress, buffer.count)
            guard count > 0 else { return nil }
            return ConnectionWatch.parse(UnsafeBufferPointer(rebasing: buffer[..<count]), descriptor: descriptor)
        }
    }

    /// Whether process `pid` is in the host's mount and user namespaces: those of PID 1 (as usherd sees it) or
    /// usherd's own (which differ when systemd gives usherd a mount namespace of its own, for `ProtectSystem=`).
    static func namespaces(of pid: Int32) -> (mount: Bool, user: Bool) {
        (
            Self.hostNamespaces.mount.contains(Self.namespace("/proc/\(pid)/ns/mnt") ?? .none),
            Self.hostNamespaces.user.contains(Self.namespace("/proc/\(pid)/ns/user") ?? .none)
        )
    }

    private struct Namespace: Hashable {
        var device: UInt64
        var inode: UInt64
        static let none = Namespace(device: 0, inode: 0)
    }

    private static func namespace(_ path: String) -> Namespace? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return Namespace(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// The host's namespaces, read once: they do not change while usherd runs.
    private static let hostNamespaces: (mount: Set<Namespace>, user: Set<Namespace>) = (
        Set(["/proc/self/ns/mnt", "/proc/1/ns/mnt"].compactMap(Self.namespace)),
        Set(["/proc/self/ns/user", "/proc/1/ns/user"].compactMap(Self.namespace))
    )

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
