import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `[seats] follow = "logind"` against a logind this project did not write (python-dbusmock's template) on a private
/// system bus: the seat follows the active session and its lock, and the bus going away and coming back.
@Suite(.integrationHangGuard)
struct LogindFollowTests {
    static let config = """
        [seats]
        source = "logind"
        follow = "logind"
        lock_after_pin_failures = 3

        [seats.follow_map]
        alice = "ada@example.com"
        bob = "bob@example.com"

        """

    /// Runs `body` with the mock logind and a usherd that follows it, both stopped afterwards.
    static func withFollowingDaemon(_ body: (DaemonProcess, MockLogind) async throws -> Void) async throws {
        let logind = try MockLogind()
        try await logind.start()
        do {
            try await DaemonProcess.using(try DaemonProcess(config: Self.config)) { daemon in
                try await daemon.start(environment: logind.environment)
                try await body(daemon, logind)
            }
        } catch {
            try? await logind.stop()
            throw error
        }
        try await logind.stop()
    }

    static func logIn(_ connection: LineConnection, _ email: String) async throws -> String {
        _ = try await connection.result("register", ["email": .string(email), "password": "secret123"])
        let login = try await connection.result(
            "login",
            ["credentials": ["type": "email_password", "email": .string(email), "password": "secret123"]]
        )
        return try #require(login["user"]?["id"]?.stringValue)
    }

    /// Waits until seat0's active user (nil: none) and lock are `user` and `locked`.
    static func waitForSeat(_ connection: LineConnection, user: String?, locked: Bool) async throws {
        try await eventually {
            let current = try await connection.result("current_user", ["seat": "seat0"])
            return current["user"]?["id"]?.stringValue == user && current["locked"] == .bool(locked)
        }
    }

    @Test func theSeatFollowsTheActiveSessionsUser() async throws {
        try await Self.withFollowingDaemon { daemon, logind in
            let client = try daemon.connect()
            let ada = try await Self.logIn(client, "ada@example.com")
            let bob = try await Self.logIn(client, "bob@example.com")
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["active_user_changed"]])

            // alice's session becomes active: [seats.follow_map] makes Ada the seat's active user.
            try await logind.addSession("c1", uid: 1000, user: "alice", active: true)
            try await Self.waitForSeat(client, user: ada, locked: false)
            // bob's session is added but not active (the template still names it the seat's ActiveSession): the seat
            // goes by each session's Active, and stays Ada's.
            try await logind.addSession("c2", uid: 1001, user: "bob", active: false)
            // A fast user switch that logind signals only on the sessions (systemd#5210).
            try await logind.setActive("c1", false)
            try await logind.setActive("c2", true)
            try await Self.waitForSeat(client, user: bob, locked: false)
            // carol has no usher user: the seat has no active user, never the previous person.
            try await logind.addSession("c3", uid: 1002, user: "carol", active: true)
            try await logind.setActive("c2", false)
            try await Self.waitForSeat(client, user: nil, locked: false)
            #expect(try await client.errorCode("access_token", ["seat": "seat0"]) == "no_active_user")
            // Ada, then Bob, then nobody: logind signals each session's Active apart, so the seat may have had nobody
            // for a moment between two users, but never a user the desktop did not show.
            var changes: [JSONValue?] = []
            while changes.compactMap({ $0 == .null ? nil : $0 }).count < 2 || changes.last != .null {
                let event = try await watcher.nextEvent()
                if event["data"]?["seat"] == "seat0" { changes.append(event["data"]?["user_id"]) }
            }
            #expect(changes.compactMap { $0 == .null ? nil : $0 } == [.string(ada), .string(bob)])
            #expect(daemon.log.contains("following logind on the system bus"))

            // A session pam_usher's open_session bound to a user: the seat follows the binding (dave is in no map).
            let cy = try await Self.logIn(client, "cy@example.com")
            try await logind.addSession("c4", uid: 1003, user: "dave", active: false)
            _ = try await client.result("open_session", ["user": .string(cy), "logind_session": "c4"])
            try await logind.setActive("c3", false)
            try await Self.waitForSeat(client, user: nil, locked: false)
            try await logind.setActive("c4", true)
            try await Self.waitForSeat(client, user: cy, locked: false)
        }
    }

    @Test func logindsLockAndTheOfflinePIN() async throws {
        try await Self.withFollowingDaemon { daemon, logind in
            let client = try daemon.connect()
            let ada = try await Self.logIn(client, "ada@example.com")
            try await logind.addSession("c1", uid: 1000, user: "alice", active: true)
            try await Self.waitForSeat(client, user: ada, locked: false)
            _ = try await client.result("set_pin", ["pin": "4821"])
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["seat_locked", "seat_unlocked"]])

            // logind's Lock signal locks the seat; its Unlock signal unlocks it.
            try await logind.lock("c1")
            try await Self.waitForSeat(client, user: ada, locked: true)
            #expect(try await client.errorCode("access_token", ["seat": "seat0"]) == "seat_locked")
            try await logind.unlock("c1")
            try await Self.waitForSeat(client, user: ada, locked: false)
            #expect(try await client.result("access_token", ["seat": "seat0"])["user_id"]?.stringValue == ada)

            // LockedHint locks it too; the PIN unlocks it with no identity provider asked.
            try await logind.setLockedHint("c1", true)
            try await Self.waitForSeat(client, user: ada, locked: true)
            #expect(try await client.errorCode("unlock", ["pin": "0000", "seat": "seat0"]) == "pin_incorrect")
            _ = try await client.result("unlock", ["pin": "4821", "seat": "seat0"])
            try await Self.waitForSeat(client, user: ada, locked: false)
            var seen: [String] = []
            while seen.count < 4 {
                let event = try await watcher.nextEvent()
                seen.append("\(event["event"]?.stringValue ?? "") \(event["data"]?["by"]?.stringValue ?? "")")
            }
            #expect(seen == ["seat_locked logind", "seat_unlocked logind", "seat_locked logind", "seat_unlocked pin"])

            // logind locks again (its LockedHint never went false: the PIN unlocked the seat, not the session).
            // Wrong PINs in a row: the third (lock_after_pin_failures = 3) logs Ada out.
            try await logind.lock("c1")
            try await Self.waitForSeat(client, user: ada, locked: true)
            for pin in ["1111", "2222", "3333"] {
                #expect(
                    try await client.errorCode("unlock", ["pin": .string(pin), "seat": "seat0"]) == "pin_incorrect"
                )
            }
            try await eventually {
                try await client.errorCode("access_token", ["user_id": .string(ada)]) == "user_logged_out"
            }
        }
    }

    @Test func theBusGoesAwayAndComesBack() async throws {
        try await Self.withFollowingDaemon { daemon, logind in
            let client = try daemon.connect()
            let ada = try await Self.logIn(client, "ada@example.com")
            let bob = try await Self.logIn(client, "bob@example.com")
            try await logind.addSession("c1", uid: 1000, user: "alice", active: true)
            try await Self.waitForSeat(client, user: ada, locked: false)

            // The system bus goes away: usherd says so, and the seat stays as it was.
            try await logind.stop()
            try await eventually { daemon.log.contains("lost the system bus") }
            #expect(try await client.result("current_user", ["seat": "seat0"])["user"]?["id"]?.stringValue == ada)

            // It comes back, with bob's session active: usherd follows again.
            try await logind.start()
            try await logind.addSession("c7", uid: 1001, user: "bob", active: true)
            try await Self.waitForSeat(client, user: bob, locked: false)
        }
    }

    @Test func logindGoesAwayAndComesBackOnTheSameBus() async throws {
        try await Self.withFollowingDaemon { daemon, logind in
            let client = try daemon.connect()
            let ada = try await Self.logIn(client, "ada@example.com")
            let bob = try await Self.logIn(client, "bob@example.com")
            try await logind.addSession("c1", uid: 1000, user: "alice", active: true)
            try await Self.waitForSeat(client, user: ada, locked: false)

            try await logind.stopLogind()
            try await eventually { daemon.log.contains("logind left the system bus") }
            #expect(try await client.result("current_user", ["seat": "seat0"])["user"]?["id"]?.stringValue == ada)

            try await logind.startLogind()
            try await eventually { daemon.log.contains("logind is back on the system bus") }
            try await logind.addSession("c2", uid: 1001, user: "bob", active: true)
            try await Self.waitForSeat(client, user: bob, locked: false)
        }
    }

    @Test func followNeedsLogindsSeatsAndAValidMap() async throws {
        let usherd = try BuiltProducts.path(of: "usherd")
        let directory = try TestDirectory()
        defer { directory.remove() }
        let cases: [(String, String)] = [
            ("[seats]\nfollow = \"logind\"\n", "seats.follow: \"logind\" needs source = \"logind\""),
            ("[seats]\nsource = \"logind\"\nfollow = \"gdm\"\n", "seats.follow: must be \"logind\" or \"none\""),
            (
                "[seats]\nsource = \"logind\"\nfollow = \"logind\"\n[seats.follow_map]\n\"-x\" = \"a@example.com\"\n",
                "seats.follow_map.-x: is not a Unix user name"
            ),
            ("[seats]\nlock_after_pin_failures = 0\n", "seats.lock_after_pin_failures: must be between 1 and 1000"),
        ]
        for (index, (text, expected)) in cases.enumerated() {
            let path = directory.file("bad\(index).toml")
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let output = try await runProcess(
                usherd,
                [
                    "--config", path, "--socket", directory.file("s\(index).sock"), "--state-directory",
                    directory.file("state"),
                ]
            )
            #expect(output.status != 0)
            #expect(output.stderr.contains(expected), "\(output.stderr)")
        }
    }
}
