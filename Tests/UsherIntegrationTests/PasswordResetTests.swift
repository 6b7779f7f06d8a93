import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `reset_password` and `usher passwd --reset` against the real daemon: the account's sessions on the device end with
/// reason `password_reset`, the old password stops working, other users are untouched, and only `manage` may do it.
@Suite(.integrationHangGuard)
struct PasswordResetTests {
    static func credentials(_ email: String, _ password: String) -> [String: JSONValue] {
        ["credentials": ["type": "email_password", "email": .string(email), "password": .string(password)]]
    }

    @Test func anAdministratorsResetLogsTheAccountOutAndLeavesOthersAlone() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let subscriber = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "first secret"])
            _ = try await client.result("register", ["email": "bob@example.com", "password": "bob secret"])
            let bob = try await client.result("login", Self.credentials("bob@example.com", "bob secret"))
            let bobID = try #require(bob["user"]?["id"]?.stringValue)
            let ann = try await client.result("login", Self.credentials("ann@example.com", "first secret"))
            let annID = try #require(ann["user"]?["id"]?.stringValue)
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == annID)
            _ = try await subscriber.result("subscribe")

            let reset = try await client.result(
                "reset_password",
                ["email": "ANN@example.com", "new_password": "second secret"]
            )
            #expect(reset["email"] == "ann@example.com")
            #expect(reset["provider"] == "local")
            #expect(reset["logged_out"] == [.string(annID)])

            // The subscriber hears why ann went, and that bob took her place (the successor rule).
            var event = try await subscriber.nextEvent()
            while event["event"] != "user_logged_out" { event = try await subscriber.nextEvent() }
            #expect(event["data"]?["user_id"]?.stringValue == annID)
            #expect(event["data"]?["reason"] == "password_reset")
            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            #expect(users.first { $0["id"]?.stringValue == annID }?["state"] == "logged_out")
            #expect(users.first { $0["id"]?.stringValue == bobID }?["state"] == "logged_in")
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == bobID)

            // Only the new password logs in; bob's session still works.
            #expect(
                try await client.errorCode("login", Self.credentials("ann@example.com", "first secret"))
                    == "invalid_credentials"
            )
            #expect(
                try await client.result("login", Self.credentials("ann@example.com", "second secret"))["user"]?["id"]?
                    .stringValue == annID
            )
            #expect(try await client.result("access_token", ["user_id": .string(bobID)])["user_id"] == .string(bobID))

            // Refusals: no such account, a password out of bounds.
            #expect(
                try await client.errorCode(
                    "reset_password",
                    ["email": "nobody@example.com", "new_password": "x1234567"]
                )
                    == "invalid_credentials"
            )
            #expect(
                try await client.errorCode("reset_password", ["email": "ann@example.com", "new_password": "x"])
                    == "invalid_params"
            )
            #expect(!daemon.log.contains("second secret") && !daemon.log.contains("first secret"))
            #expect(daemon.log.contains("action=reset_password"))
        }
    }

    @Test func anAPIKeySessionOfTheAccountEndsTooAndTheResetSurvivesARestart() async throws {
        try await DaemonProcess.with { daemon in
            var client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "first secret"])
            _ = try await client.result("login", Self.credentials("ann@example.com", "first secret"))
            let key = try #require(try await client.result("create_api_key", ["name": "kiosk"])["key"]?.stringValue)
            let viaKey = try await client.result("login", ["credentials": ["type": "api_key", "key": .string(key)]])
            let annID = try #require(viaKey["user"]?["id"]?.stringValue)
            #expect(viaKey["user"]?["kind"] == "api_key")

            let reset = try await client.result(
                "reset_password",
                ["email": "ann@example.com", "new_password": "second secret"]
            )
            #expect(reset["logged_out"] == [.string(annID)])
            // The logout and the new password are durable together.
            try await daemon.restart()
            client = try daemon.connect()
            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            #expect(users.first { $0["id"]?.stringValue == annID }?["state"] == "logged_out")
            #expect(
                try await client.errorCode("login", Self.credentials("ann@example.com", "first secret"))
                    == "invalid_credentials"
            )
            _ = try await client.result("login", Self.credentials("ann@example.com", "second secret"))
        }
    }

    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func aPeerWithoutUnscopedManageIsRefused() async throws {
        // nobody may read and hold tokens, and manage only on seat0: a reset logs users out wherever they are.
        let rules = """
            [[access.rule]]
            uid = 65534
            allow = ["read", "token"]

            [[access.rule]]
            uid = 65534
            allow = ["manage"]
            seats = ["seat0"]
            """
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(rules)) { daemon in
            try await daemon.start()
            let root = try daemon.connect()
            _ = try await root.result("register", ["email": "ann@example.com", "password": "first secret"])
            let login = try await root.result("login", Self.credentials("ann@example.com", "first secret"))
            let annID = try #require(login["user"]?["id"]?.stringValue)
            let nobody = try await OtherUser.connect(path: daemon.socketPath)
            nobody.timeout = .seconds(60)
            #expect(
                try await nobody.errorCode("reset_password", ["email": "ann@example.com", "new_password": "mine now"])
                    == "permission_denied"
            )
            // Nothing changed: ann is logged in, and her password is hers.
            #expect(try await root.result("current_user")["user"]?["id"]?.stringValue == annID)
            #expect(
                try await root.errorCode("login", Self.credentials("ann@example.com", "mine now"))
                    == "invalid_credentials"
            )
        }
    }

    @Test func usherPasswdResetReadsTheNewPasswordFromStdin() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "first secret"])
            let login = try await client.result("login", Self.credentials("ann@example.com", "first secret"))
            let annID = try #require(login["user"]?["id"]?.stringValue)
            let run = try await CLITests.usher(
                daemon,
                ["passwd", "--reset", "ann@example.com", "--password-stdin"],
                stdin: "second secret\n"
            )
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("Reset the password of ann@example.com at local."))
            // Named as people name users, by email (issue 42, item 12), not by the id the daemon answered with.
            #expect(run.stdout.contains("Logged out ann@example.com."), "\(run.stdout)")
            #expect(!run.stdout.contains(annID))
            _ = try await client.result("login", Self.credentials("ann@example.com", "second secret"))

            let both = try await CLITests.usher(
                daemon,
                ["passwd", "--reset", "ann@example.com", "--email", "ann@example.com", "--password-stdin"],
                stdin: "third secret\n"
            )
            #expect(both.status != 0)
            #expect(both.stderr.contains("--reset"))
            let empty = try await CLITests.usher(daemon, ["passwd", "--reset", "ann@example.com", "--password-stdin"])
            #expect(empty.status == 1)
            _ = try await client.result("login", Self.credentials("ann@example.com", "second secret"))
        }
    }
}
