import NIOCore
import NIOPosix

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Reads what the kernel says about the process at the other end of a connection.
enum KernelPeer {
    /// `SO_PEERCRED` (uid, gid, pid, as they were when the peer called `connect`) and `SO_PEERGROUPS`.
    static func credentials(of channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(PeerCredentials(uid: UInt32.max, gid: UInt32.max, pid: 0))
        }
        let credentials: EventLoopFuture<Ucred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        return credentials.flatMap { credentials in
            let groups: EventLoopFuture<PeerGroups> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET),
                name: SocketOptionName(SO_PEERGROUPS)
            )
            return groups.map { Optional($0) }.recover { _ in nil }.map { groups in
                PeerCredentials(
                    uid: credentials.uid,
                    gid: credentials.gid,
                    pid: credentials.pid,
                    groups: groups?.list ?? PeerGroups.fromProcfs(pid: credentials.pid)
                )
            }
        }
    }

    /// The peer's executable (`/proc/PID/exe`), read now; nil when it cannot be read. A connection's peer has it
    /// already, read off the event loop when the connection was accepted (`PeerCredentials.program`).
    static func executable(of pid: Int32) -> String? {
        ProgramIdentifier.executable(of: pid)
    }

    /// `struct ucred` from `<sys/socket.h>` (hidden behind `_GNU_SOURCE` in the Glibc module): the same three
    /// 32-bit fields in the same order.
    private struct Ucred: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// The buffer for `SO_PEERGROUPS`: up to 128 supplementary groups (more make the call fail with ERANGE, and
    /// the groups are read from `/proc` instead). NIO zero-fills the buffer and the kernel returns the groups sorted
    /// in ascending order, so the list ends at the last non-zero entry. (A peer whose only supplementary group is
    /// gid 0 is therefore seen without it; its primary group still counts.)
    private struct PeerGroups: Sendable {
        typealias Eight = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)
        var storage:
            (
                Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight,
                Eight
            ) =
                (
                    (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0)
                )

        var list: [UInt32] {
            withUnsafeBytes(of: self.storage) { raw in
                let gids = Array(raw.bindMemory(to: UInt32.self))
                guard let last = gids.lastIndex(where: { $0 != 0 }) else { return [] }
                return Array(gids[...last])
            }
        }

        /// The `Groups:` line of `/proc/PID/status`, for peers with more groups than the buffer holds.
        static func fromProcfs(pid: Int32) -> [UInt32] {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Groups:") })
            else { return [] }
            return line.dropFirst("Groups:".count).split(whereSeparator: { $0 == " " || $0 == "\t" })
                .compactMap { UInt32($0) }
        }
    }
}
