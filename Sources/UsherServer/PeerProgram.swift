import Synchronization
import UsherProtocol

/// The file an executable was, when it was identified: what its digest is cached by, and what a digest computed later
/// (after a reload asked for digests) must still be the file of.
package struct ExecutableFile: Sendable, Hashable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    /// Modification and status-change times, in nanoseconds: a file rewritten in place, even with its old mtime
    /// put back (`touch -d`), has a new ctime.
    var modified: Int64
    var changed: Int64
}

/// The descriptor through which the peer's process holds its end of the connection: what shows that the process has
/// not `exec`ed since it connected (see `ProgramIdentifier`, and `ConnectionWatch`, which reads it again).
package struct HeldConnection: Sendable, Hashable {
    /// The descriptor's number in the peer's process.
    var descriptor: Int32
    /// The inode of the peer's socket (`socket:[INODE]`).
    var inode: UInt64
}

/// What usherd found out about the program at the other end of a connection, once, when it accepted it
/// (`ProgramIdentifier`). A process that `exec`s another program later loses what its program conditions gave it:
/// `PeerProgram.isUnchanged` is asked on every check.
package struct ProgramIdentity: Sendable, Hashable {
    /// The process was pinned by a pidfd and still ran after everything below was read, its executable could be read,
    /// and it held its end of the connection in a close-on-exec descriptor: only then do rules with program
    /// conditions match it.
    package var identified: Bool
    /// `/proc/PID/exe`.
    package var executable: String?
    /// The executable's file, for its digest.
    package var file: ExecutableFile?
    /// `sd_pid_get_unit`: the system unit (`kiosk-app.service`, or `user@1000.service` for a user's services).
    package var unit: String?
    /// `sd_pid_get_user_unit`: the unit of the user's service manager.
    package var userUnit: String?
    /// `executable`, looked up in usherd's own mount namespace, is the very file the process runs (same device and
    /// inode): false for a file bind-mounted over the path in another mount namespace, a path that usherd cannot see,
    /// or one replaced since the process started.
    package var executableIsPath: Bool
    /// The process is in the host's mount namespace (PID 1's, or usherd's own): false for a container, a sandbox, or
    /// anything started with `unshare -m`.
    package var hostMountNamespace: Bool
    /// The process is in the host's user namespace (PID 1's, or usherd's own): false in a user namespace of its own
    /// (`unshare -U`, rootless containers), where it may be "root" and mount what it likes.
    package var hostUserNamespace: Bool
    /// Where the process holds its end of the connection, its `fdinfo` held open to be read again; nil for a peer
    /// made in-process (tests).
    package var watch: ConnectionWatch?

    package init(
        identified: Bool,
        executable: String? = nil,
        file: ExecutableFile? = nil,
        unit: String? = nil,
        userUnit: String? = nil,
        executableIsPath: Bool = true,
        hostMountNamespace: Bool = true,
        hostUserNamespace: Bool = true,
        watch: ConnectionWatch? = nil
    ) {
        self.identified = identified
        self.executable = executable
        self.file = file
        self.unit = unit
        self.userUnit = userUnit
        self.executableIsPath = executableIsPath
        self.hostMountNamespace = hostMountNamespace
        self.hostUserNamespace = hostUserNamespace
        self.watch = watch
    }

    /// Nothing is known: a peer that could not be pinned, or one made in-process without a socket.
    package static let unidentified = ProgramIdentity(identified: false)
}

/// Whose program it is: the digest queue takes turns by uid, and hashes only for peers that a rule with
/// `executable_sha256` could match.
package struct ProgramOwner: Sendable, Hashable {
    var uid: UInt32
    var gid: UInt32
    var groups: [UInt32]
}

/// One connection's program: its identity, and the SHA-256 of its executable once a rule has asked for it.
///
/// A class shared by the connection's `PeerCredentials` (so the per-request policy check reads it without a copy)
/// and `ExecutableDigests`' list of open connections (so that a reload which adds an `executable_sha256` rule can
/// hash the executables of connections that are already open before the rule applies).
package final class PeerProgram: Sendable, Hashable {
    package let identity: ProgramIdentity
    /// The peer's pid, to reopen `/proc/PID/exe` when a digest is asked for later, and to see that the process still
    /// runs what it ran when it connected.
    let pid: Int32
    /// The peer's credentials; nil for in-process peers.
    let owner: ProgramOwner?
    /// The executable's digest (lowercase hex): nil until computed; `.some(nil)` when it cannot be, because the file
    /// is no longer the one the process ran, or is larger than `ExecutableDigests.maximumBytes`.
    private let digest = Mutex<String??>(nil)
    /// Where the program is listed for reloads; it leaves the list when the connection's last reference goes.
    private let roster: ExecutableDigests?

    package init(
        identity: ProgramIdentity,
        pid: Int32 = 0,
        owner: ProgramOwner? = nil,
        roster: ExecutableDigests? = nil
    ) {
        self.identity = identity
        self.pid = pid
        self.owner = owner
        self.roster = roster
    }

    deinit { self.roster?.forget(ObjectIdentifier(self)) }

    /// A program nothing is known about (in-process peers of the tests, peers that could not be pinned).
    package static let unidentified = PeerProgram(identity: .unidentified)

    /// The executable's SHA-256, when it has been computed (and could be).
    package var executableSHA256: String? { self.digest.withLock { $0 ?? nil } }

    /// Whether a digest has been asked for already (computed or found impossible).
    var hasDigest: Bool { self.digest.withLock { $0 != nil } }

    func setDigest(_ value: String?) { self.digest.withLock { if $0 == nil { $0 = .some(value) } } }

    /// Whether the process still runs the program it was identified as: its executable is still the same file, and it
    /// still holds its end of the connection in the same close-on-exec descriptor (an `exec` closes it). A `stat` of
    /// `/proc/PID/exe` and a `pread` of the `fdinfo` kept open (`ConnectionWatch`), on the event loop, made only when a
    /// rule with program conditions is about to match, and by `hello`. True for in-process peers, which have no
    /// process.
    var isUnchanged: Bool {
        guard self.identity.identified else { return false }
        guard let watch = self.identity.watch else { return true }
        // The executable first: the descriptor read after it fails if the process has gone since, so the file was
        // that of this process, not of another that took over its pid.
        guard let file = self.identity.file, let now = watch.executableFile(), now.device == file.device,
            now.inode == file.inode
        else { return false }
        return watch.current() == watch.held
    }

    /// What `hello` reports.
    package var wireValue: ProgramInfo {
        ProgramInfo(
            identified: self.isUnchanged,
            executable: self.identity.executable,
            executableSHA256: self.executableSHA256,
            unit: self.identity.unit,
            userUnit: self.identity.userUnit
        )
    }

    package static func == (lhs: PeerProgram, rhs: PeerProgram) -> Bool { lhs === rhs }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
