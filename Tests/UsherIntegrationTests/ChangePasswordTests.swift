import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `change_password` and `usher passwd` against the real daemon: the current password is required, the new one is
/// the one that logs in from then on, and the account's sessions on the device stay logged in.
@Suite(.integrationHangGuard)
struct ChangePasswordTests {
    static func credentials(_ password: String) -> [String: JSONValue] {
        ["credentials": ["type": "email_password", "email": "ann@example.com", "password": .string(password)]]
    }

    @Test func theCurrentPasswordChangesItAndTheSessionStays() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "first secret"])
            let login = try await client.result("login", Self.credentials("first secret"))
            let annID = try #require(login["user"]?["id"]?.stringValue)

            let wrong = [
                "email": JSONValue.string("ANN@example.com"), "old_password": "guess", "new_password": "x1234567",
            ]
            #expect(try await client.errorCode("change_password", wrong) == "invalid_credentials")
            let short = [
                "email": JSONValue.string("ann@example.com"), "old_password": "first secret", "new_password": "x",
            ]
            #expect(try await client.errorCode("change_password", short) == "invalid_params")
            let changed = try await client.result(
                "change_password",
                ["email": "ann@example.com", "old_password": "first secret", "new_password": "second secret"]
            )
            #expect(changed["email"] == "ann@example.com")
            #expect(changed["provider"] == "local")

            // The session on the device is untouched; from now on only the new password logs in.
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == annID)
            #expect(try await client.result("access_token")["user_id"]?.stringValue == annID)
            #expect(try await client.errorCode("login", Self.credentials("first secret")) == "invalid_credentials")
            #expect(
                try await client.result("login", Self.credentials("second secret"))["user"]?["id"] == .string(annID)
            )
            // Never a password in the log.
            #expect(!daemon.log.contains("second secret") && !daemon.log.contains("first secret"))
            #expect(daemon.log.contains("action=change_password"))
        }
    }

    @Test func wrongCurrentPasswordsAreThrottledLikeFailedLogins() async throws {
        // One free failure, then an hour's wait: the second wrong password makes the third attempt wait, whichever of
        // change_password and login it is. (An hour never passes during the test: the refusal is the state reached.)
        let config = "[login_throttle]\naccount_free_failures = 0\nfirst_delay = \"1h\"\nmax_delay = \"1h\"\n"
        try await DaemonProcess.with(config: config) { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "first secret"])
            let wrong = [
                "email": JSONValue.string("ann@example.com"), "old_password": "guess", "new_password": "x1234567",
            ]
            #expect(try await client.errorCode("change_password", wrong) == "invalid_credentials")
            let right = [
                "email": JSONValue.string("ann@example.com"), "old_password": "first secret",
                "new_password": "second secret",
            ]
            let refused = try await client.call("change_password", right)
            #expect(refused["error"]?["code"] == "rate_limited", "\(refused)")
            #expect(refused["error"]?["data"]?["retry_after"] != nil)
            #expect(try await client.errorCode("login", Self.credentials("first secret")) == "rate_limited")
        }
    }

    @Test func usherPasswdReadsBothPasswordsFromStdinNeverArgv() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "first secret"])
            let run = try await CLITests.usher(
                daemon,
                ["passwd", "--email", "ann@example.com", "--password-stdin"],
                stdin: "first secret\nsecond secret\n"
            )
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("Changed the password of ann@example.com"))
            _ = try await client.result("login", Self.credentials("second secret"))

            let oneLine = try await CLITests.usher(
                daemon,
                ["passwd", "--email", "ann@example.com", "--password-stdin"],
                stdin: "second secret\n"
            )
            #expect(oneLine.status == 1)
            #expect(oneLine.stderr.contains("first two lines"))
            let refused = try await CLITests.usher(
                daemon,
                ["passwd", "--email", "ann@example.com", "--password-stdin"],
                stdin: "wrong\nthird secret\n"
            )
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("invalid_credentials"))
        }
    }
}
