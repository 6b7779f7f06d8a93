import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `usher pin set`, `usher lock`, `usher unlock`, run as a person would: the PIN typed at the terminal (without echo,
/// twice for a new one) or given on stdin, never on the command line.
@Suite(.integrationHangGuard)
struct SeatLockCLITests {
    @Test func thePINIsSetAtTheTerminalAndUnlocksTheLockedSeat() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let ada = try await SeatLockTests.logIn(client, "ada@example.com")
            let usher = try BuiltProducts.path(of: "usher")

            let set = try TerminalSession(usher, ["pin", "set"], environment: ["USHER_SOCKET": daemon.socketPath])
            try await set.waitFor("New PIN: ")
            try set.type("582046\n")
            try await set.waitFor("Repeat the new PIN: ")
            try set.type("582046\n")
            #expect(try await set.exitStatus() == 0, "\(set.text)")
            #expect(set.text.contains("Set the PIN of ada@example.com."))
            #expect(!set.text.contains("582046"), "the PIN was echoed")

            let mismatch = try TerminalSession(usher, ["pin", "set"], environment: ["USHER_SOCKET": daemon.socketPath])
            try await mismatch.waitFor("New PIN: ")
            try mismatch.type("111111\n")
            try await mismatch.waitFor("Repeat the new PIN: ")
            try mismatch.type("222222\n")
            #expect(try await mismatch.exitStatus() == 1)
            #expect(mismatch.text.contains("the PINs do not match"))

            let lock = try await CLITests.usher(daemon, ["lock"])
            #expect(lock.status == 0, "\(lock.stderr)")
            #expect(lock.stdout == "Seat seat0 is locked (by usherd).\n")
            let token = try await CLITests.usher(daemon, ["token"])
            #expect(token.status == 1)
            #expect(token.stderr.contains("seat_locked"), "\(token.stderr)")

            let wrong = try await CLITests.usher(daemon, ["unlock", "--pin-stdin"], stdin: "000000\n")
            #expect(wrong.status == 1)
            #expect(wrong.stderr.contains("pin_incorrect"), "\(wrong.stderr)")
            let unlock = try TerminalSession(usher, ["unlock"], environment: ["USHER_SOCKET": daemon.socketPath])
            try await unlock.waitFor("PIN: ")
            try unlock.type("582046\n")
            #expect(try await unlock.exitStatus() == 0, "\(unlock.text)")
            #expect(unlock.text.contains("Seat seat0 is unlocked."))
            #expect(try await CLITests.usher(daemon, ["token"]).status == 0)

            // Scripted: the PIN from stdin, for a named user; a PIN too short is refused before asking the daemon.
            #expect(try await CLITests.usher(daemon, ["pin", "set", ada, "--pin-stdin"], stdin: "7777\n").status == 0)
            let short = try await CLITests.usher(daemon, ["pin", "set", "--pin-stdin"], stdin: "77\n")
            #expect(short.status == 1)
            #expect(short.stderr.contains("4 to 64 characters"))
            #expect(try await CLITests.usher(daemon, ["lock", "--seat", "nowhere"]).status == 1)
        }
    }
}
