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

/// What usherd found out about the program at the other end of a connection, once, when it accepted it
/// (`ProgramIdentifier`). A process that `exec`s another program later is still the one it was then.
package struct ProgramIdentity: Sendable, Hashable {
    /// The process was pinned by a pidfd and still ran after everything below was read, and its executable could be
    /// read: only then do rules with program conditions match it.
    package var identified: Bool
    /// `/proc/PID/exe`.
    package var executable: String?
    /// The executable's file, for its digest.
    package var file: ExecutableFile?
    /// `sd_pid_get_unit`: the system unit (`kiosk-app.service`, or `user@1000.service` for a user's services).
    package var unit: String?
    /// `sd_pid_get_user_unit`: the unit of the user's service manager.
    package var userUnit: String?

    package init(
        identified: Bool,
        executable: String? = nil,
        file: ExecutableFile? = nil,
        unit: String? = nil,
        userUnit: String? = nil
    ) {
        self.identified = identified
        self.executable = executable
        self.file = file
        self.unit = unit
        self.userUnit = userUnit
    }

    /// Nothing is known: a peer that could not be pinned, or one made in-process without a socket.
    package static let unidentified = ProgramIdentity(identified: false)
}

/// One connection's program: its identity, and the SHA-256 of its executable once a rule has asked for it.
///
/// A class shared by the connection's `PeerCredentials` (so the per-request policy check reads it without a copy)
/// and `ExecutableDigests`' list of open connections (so that a reload which adds an `executable_sha256` rule can
/// hash the executables of connections that are already open before the rule applies).
package final class PeerProgram: Sendable, Hashable {
    package let identity: ProgramIdentity
    /// The peer's pid, to reopen `/proc/PID/exe` when a digest is asked for later.
    let pid: Int32
    /// The executable's digest (lowercase hex): nil until computed; `.some(nil)` when it cannot be, because the file
    /// is no longer the one the process ran.
    private let digest = Mutex<String??>(nil)
    /// Where the program is listed for reloads; it leaves the list when the connection's last reference goes.
    private let roster: ExecutableDigests?

    package init(identity: ProgramIdentity, pid: Int32 = 0, roster: ExecutableDigests? = nil) {
        self.identity = identity
        self.pid = pid
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

    /// What `hello` reports.
    package var wireValue: HelloRequest.Program {
        HelloRequest.Program(
            identified: self.identity.identified,
            executable: self.identity.executable,
            executableSHA256: self.executableSHA256,
            unit: self.identity.unit,
            userUnit: self.identity.userUnit
        )
    }

    package static func == (lhs: PeerProgram, rhs: PeerProgram) -> Bool { lhs === rhs }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
