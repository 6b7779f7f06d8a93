import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The seat's lock without logind: `lock_seat`, `unlock` with the PIN, `set_pin`, against the real daemon.
@Suite(.integrationHangGuard)
struct SeatLockTests {
    static let config = """
        [seats]
        lock_after_pin_failures = 3

        [login_throttle]
        account_free_failures = 4
        account_lockout_failures = 5
        lockout = "1h"
        forget_after = "2h"
        peer_free_failures = 50
        peer_lockout_failures = 60

        """

    /// Registers and logs in `email`; answers its id.
    static func logIn(_ connection: LineConnection, _ email: String) async throws -> String {
        _ = try await connection.result("register", ["email": .string(email), "password": "secret123"])
        let login = try await connection.result(
            "login",
            ["credentials": ["type": "email_password", "email": .string(email), "password": "secret123"]]
        )
        return try #require(login["user"]?["id"]?.stringValue)
    }

    static func nextEvent(_ connection: LineConnection, named name: String) async throws -> [String: JSONValue] {
        while true {
            let event = try await connection.nextEvent()
            if event["event"] == .string(name) { return event }
        }
    }

    @Test func lockRefusesTokensUntilThePINUnlocksAndSurvivesARestart() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["seat_locked", "seat_unlocked"]])
            let ada = try await Self.logIn(client, "ada@example.com")
            #expect(try await client.result("current_user")["locked"] == false)
            #expect(try await client.result("set_pin", ["pin": "4821"])["user_id"]?.stringValue == ada)

            let locked = try await client.result("lock_seat")
            #expect(locked["locked"] == true)
            #expect(locked["by"] == "usherd")
            let event = try await Self.nextEvent(watcher, named: "seat_locked")
            #expect(event["data"]?["by"] == "usherd")
            #expect(event["data"]?["seat"] == "seat0")

            // The user is still there, and says the seat is locked; its tokens are refused, by seat or by id.
            let current = try await client.result("current_user")
            #expect(current["user"]?["id"]?.stringValue == ada)
            #expect(current["locked"] == true)
            let refused = try await client.call("access_token")
            #expect(refused["error"]?["code"] == "seat_locked")
            #expect(refused["error"]?["data"]?["seat"] == "seat0")
            #expect(try await client.errorCode("access_token", ["user_id": .string(ada)]) == "seat_locked")
            #expect(
                try await client.errorCode("access_token", ["audience": "https://api.example.com"]) == "seat_locked"
            )
            #expect(
                try await client.errorCode(
                    "dpop_proof",
                    ["htm": "GET", "htu": "https://api.example.com/x"]
                ) == "seat_locked"
            )
            // Whoever sits at a locked seat cannot replace the PIN as the user; root can (this test runs as root, so
            // only the refusal of a peer that is not is left to OwnershipTests' rule).
            // A lock is durable: a restart keeps it.
            _ = try await daemon.stop()
            try await daemon.start()
            let again = try daemon.connect()
            #expect(try await again.result("current_user")["locked"] == true)
            #expect(try await again.errorCode("access_token") == "seat_locked")

            #expect(try await again.errorCode("unlock", ["pin": "0000"]) == "pin_incorrect")
            let unlocked = try await again.result("unlock", ["pin": "4821"])
            #expect(unlocked["locked"] == false)
            #expect(try await again.result("current_user")["locked"] == false)
            #expect(try await again.result("access_token")["user_id"]?.stringValue == ada)
            // Unlocking an unlocked seat changes nothing and checks no PIN.
            #expect(try await again.result("unlock", ["pin": "anything"])["locked"] == false)
        }
    }

    @Test func wrongPINsAreThrottledAndEnoughOfThemLogTheUserOut() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let client = try daemon.connect()
            let ada = try await Self.logIn(client, "ada@example.com")
            _ = try await client.result("set_pin", ["pin": "4821"])
            _ = try await client.result("lock_seat")
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["user_logged_out"]])
            #expect(try await client.errorCode("unlock", ["pin": "1111"]) == "pin_incorrect")
            #expect(try await client.errorCode("unlock", ["pin": "2222"]) == "pin_incorrect")
            // The third wrong PIN in a row (lock_after_pin_failures = 3) logs Ada out.
            #expect(try await client.errorCode("unlock", ["pin": "3333"]) == "pin_incorrect")
            let loggedOut = try await Self.nextEvent(watcher, named: "user_logged_out")
            #expect(loggedOut["data"]?["user_id"]?.stringValue == ada)
            #expect(loggedOut["data"]?["reason"] == "pin_failures")
            #expect(try await client.errorCode("access_token", ["user_id": .string(ada)]) == "user_logged_out")
            // The wrong PINs were failed logins of Ada's account: two wrong passwords more make five, the lockout
            // (account_lockout_failures = 5), and the right password is then refused.
            for password in ["wrong-1", "wrong-2"] {
                #expect(
                    try await client.errorCode(
                        "login",
                        [
                            "credentials": [
                                "type": "email_password", "email": "ada@example.com", "password": .string(password),
                            ]
                        ]
                    ) == "invalid_credentials"
                )
            }
            let throttled = try await client.call(
                "login",
                ["credentials": ["type": "email_password", "email": "ada@example.com", "password": "secret123"]]
            )
            #expect(throttled["error"]?["code"] == "rate_limited")
        }
    }

    @Test func thePINIsCheckedAndForgottenWithItsUser() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let client = try daemon.connect()
            #expect(try await client.errorCode("set_pin", ["pin": "1234"]) == "no_active_user")
            let ada = try await Self.logIn(client, "ada@example.com")
            #expect(try await client.errorCode("set_pin", ["pin": "123"]) == "invalid_params")
            #expect(
                try await client.errorCode("set_pin", ["pin": .string(String(repeating: "9", count: 65))])
                    == "invalid_params"
            )
            #expect(try await client.errorCode("set_pin", ["pin": "12\u{7}4"]) == "invalid_params")
            _ = try await client.result("set_pin", ["pin": "123456"])
            _ = try await client.result("lock_seat")
            // Removing the user forgets its PIN: logged in again, it has none, and cannot unlock the seat with it.
            _ = try await client.result("remove_user", ["user_id": .string(ada), "force": true])
            _ = try await client.result(
                "login",
                ["credentials": ["type": "email_password", "email": "ada@example.com", "password": "secret123"]]
            )
            #expect(try await client.errorCode("unlock", ["pin": "123456"]) == "pin_not_set")
            // The PIN is never in the daemon's log.
            #expect(!daemon.log.contains("123456"))
        }
    }
}
