import Foundation
import Testing
import UsherServer

/// How a peer's process is pinned where the kernel has no `SO_PEERPIDFD` (before Linux 6.5; the integration tests
/// take the `SO_PEERPIDFD` path where the kernel has it): `pidfd_open` on the `SO_PEERCRED` pid, and the process
/// found there is the peer only if it was already running when the connection was accepted. The process here is the
/// test's own.
@Suite(.timeLimit(.minutes(1)))
struct ProgramIdentifierTests {
    @Test func withoutPeerPidfdOnlyAProcessRunningAtTheAcceptIsThePeer() {
        let accepted = ProgramIdentifier.identity(
            pid: getpid(),
            pin: .unsupported,
            acceptedAt: ProgramIdentifier.bootTicks()
        )
        #expect(accepted.identified)
        #expect(accepted.executable == URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path)

        // A connection accepted before this process started cannot have been made by it: the peer's pid was taken
        // over by another process, which is not identified in its place.
        let taken = ProgramIdentifier.identity(pid: getpid(), pin: .unsupported, acceptedAt: 0)
        #expect(!taken.identified)
        #expect(taken.executable == nil)
    }

    @Test func aPeerThatCannotBePinnedIsUnidentified() {
        let identity = ProgramIdentifier.identity(
            pid: getpid(),
            pin: .failed,
            acceptedAt: ProgramIdentifier.bootTicks()
        )
        #expect(identity == .unidentified)
    }
}
