import Foundation
import Testing
import UsherServer

/// How a peer's process is pinned where the kernel has no `SO_PEERPIDFD` (before Linux 6.5; the integration tests
/// take the `SO_PEERPIDFD` path where the kernel has it): `pidfd_open` on the `SO_PEERCRED` pid, and the process
/// found there is the peer only if it was already running when the connection was accepted. The process here is the
/// test's own, holding one end of a socket pair; the other end's `SO_COOKIE` stands for the accepted connection.
@Suite(.timeLimit(.minutes(1)))
struct ProgramIdentifierTests {
    /// A connected pair: the descriptor this process holds (close-on-exec unless `inheritable`) and the cookie of the
    /// other end, as usherd would read it from its accepted socket.
    final class SocketPair {
        let held: Int32
        let other: Int32
        let cookie: UInt64

        init(inheritable: Bool = false) throws {
            var pair: [Int32] = [0, 0]
            let type = Int32(SOCK_STREAM.rawValue) | (inheritable ? 0 : Int32(SOCK_CLOEXEC.rawValue))
            guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { throw POSIXError(.EIO) }
            self.held = pair[0]
            self.other = pair[1]
            var cookie: UInt64 = 0
            var length = socklen_t(MemoryLayout<UInt64>.size)
            guard getsockopt(pair[1], SOL_SOCKET, 57, &cookie, &length) == 0 else { throw POSIXError(.EIO) }
            self.cookie = cookie
        }

        deinit {
            close(self.held)
            close(self.other)
        }
    }

    @Test func withoutPeerPidfdOnlyAProcessRunningAtTheAcceptIsThePeer() throws {
        let pair = try SocketPair()
        let accepted = ProgramIdentifier.identity(
            pid: getpid(),
            pin: .unsupported,
            acceptedAt: ProgramIdentifier.bootTicks(),
            cookie: pair.cookie
        )
        #expect(accepted.identified)
        #expect(accepted.executable == URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path)
        #expect(accepted.executableIsPath)
        #expect(accepted.hostMountNamespace && accepted.hostUserNamespace)

        // A connection accepted before this process started cannot have been made by it: the peer's pid was taken
        // over by another process, which is not identified in its place.
        let taken = ProgramIdentifier.identity(pid: getpid(), pin: .unsupported, acceptedAt: 0, cookie: pair.cookie)
        #expect(!taken.identified)
        #expect(taken.executable == nil)
    }

    @Test func aPeerThatCannotBePinnedIsUnidentified() throws {
        let pair = try SocketPair()
        let identity = ProgramIdentifier.identity(
            pid: getpid(),
            pin: .failed,
            acceptedAt: ProgramIdentifier.bootTicks(),
            cookie: pair.cookie
        )
        #expect(identity == .unidentified)
    }

    /// The process must hold its end of the connection close-on-exec: a descriptor that is not may have been
    /// inherited across an `exec`, so what runs now may not be what connected. Nor is a process that does not hold
    /// that connection at all (another connection's cookie) its peer.
    @Test func aPeerIsIdentifiedOnlyWhileItHoldsTheConnectionCloseOnExec() throws {
        let inheritable = try SocketPair(inheritable: true)
        let identity = ProgramIdentifier.identity(
            pid: getpid(),
            pin: .unsupported,
            acceptedAt: ProgramIdentifier.bootTicks(),
            cookie: inheritable.cookie
        )
        #expect(identity == .unidentified)

        let unrelated = try SocketPair()
        let elsewhere = ProgramIdentifier.identity(
            pid: getpid(),
            pin: .unsupported,
            acceptedAt: ProgramIdentifier.bootTicks(),
            cookie: unrelated.cookie &+ 1_000_000
        )
        #expect(elsewhere == .unidentified)
    }

    /// The check made on every use (`hello`'s `program.identified`, every rule with program conditions) reads the
    /// descriptor's `fdinfo` kept open since identification, again from its start: true as often as it is asked while
    /// the process holds the connection, false once the descriptor is closed (as an `exec` closes it), and still false
    /// when another socket may have taken the same descriptor number.
    @Test func aPeerThatClosesItsEndOfTheConnectionIsNoLongerIdentified() throws {
        var pair: SocketPair? = try SocketPair()
        let identity = ProgramIdentifier.identity(
            pid: getpid(),
            pin: .unsupported,
            acceptedAt: ProgramIdentifier.bootTicks(),
            cookie: pair!.cookie
        )
        let program = PeerProgram(identity: identity, pid: getpid())
        #expect(program.wireValue.identified)
        #expect(program.wireValue.identified)

        // Closed; the lowest free number is likely taken again at once (other tests run beside this one, so which
        // descriptor takes it is not asserted): either way the socket held is gone.
        pair = nil
        let reused = try SocketPair()
        #expect(!program.wireValue.identified)
        withExtendedLifetime(reused) {}
    }
}
