import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `usher seats`, `usher inhibit`, `usher leases` and `--seat`, run as a person would against the real daemon.
@Suite(.integrationHangGuard)
struct SeatsCLITests {
    @Test func inhibitHoldsALeaseWhileTheCommandRunsAndExitsWithItsStatus() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "joe@example.com", "password": "secret123"])
            let joe = try await client.result(
                "login",
                ["credentials": ["type": "email_password", "email": "joe@example.com", "password": "secret123"]]
            )
            let joeID = try #require(joe["user"]?["id"]?.stringValue)
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])

            // The command lists the leases and tries to switch while the lease is held, then exits with 7.
            let usher = try BuiltProducts.path(of: "usher")
            let script = #""$0" leases; "$0" switch "$1"; echo "switch=$?"; exit 7"#
            let run = try await CLITests.usher(
                daemon,
                ["inhibit", "--why", "card payment", "--who", "till", "--", "/bin/sh", "-c", script, usher, joeID]
            )
            #expect(run.status == 7, "\(run.stderr)")
            #expect(run.stdout.contains("till") && run.stdout.contains("card payment") && run.stdout.contains("block"))
            #expect(run.stdout.contains("switch=1"))
            #expect(run.stderr.contains("(inhibited)"))
            // Gone with usher's connection.
            try await eventually { try await client.result("list_leases")["leases"]?.arrayValue?.isEmpty == true }
            let leases = try await CLITests.usher(daemon, ["leases"])
            #expect(leases.stdout == "No leases.\n")

            let unknown = try await CLITests.usher(daemon, ["inhibit", "--why", "x", "--", "/nonexistent/command"])
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("cannot run /nonexistent/command"))
            let noCommand = try await CLITests.usher(daemon, ["inhibit", "--why", "x"])
            #expect(noCommand.status == 2)
        }
    }

    @Test func seatsAndTheSeatOption() async throws {
        try await DaemonProcess.with(config: SeatsIntegrationTests.car) { daemon in
            #expect(try await CLITests.usher(daemon, ["login", "--anonymous", "--seat", "rear"]).status == 0)
            let rear = try await CLITests.usher(daemon, ["--json", "whoami", "--seat", "rear"])
            #expect(rear.stdout.contains(#""seat":"rear""#))
            #expect(rear.stdout.contains(#""state":"logged_in""#))
            // The default seat (driver) has nobody: "nobody is logged in" has its own exit status (4).
            let driver = try await CLITests.usher(daemon, ["whoami"])
            #expect(driver.status == 4)
            #expect(driver.stdout.isEmpty)
            #expect(driver.stderr == "No user is logged in.\n")
            #expect(try await CLITests.usher(daemon, ["token", "--seat", "rear"]).status == 0)
            #expect(try await CLITests.usher(daemon, ["token"]).status == 4)

            let seats = try await CLITests.usher(daemon, ["seats"])
            let rows = seats.stdout.split(separator: "\n").map(String.init)
            #expect(rows.count == 3)
            #expect(rows[1].hasPrefix("* driver") && rows[1].contains("none"))
            #expect(rows[2].hasPrefix("  rear") && rows[2].contains("u_"))
            let unknown = try await CLITests.usher(daemon, ["whoami", "--seat", "trunk"])
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("(seat_not_found)"))
        }
    }
}
