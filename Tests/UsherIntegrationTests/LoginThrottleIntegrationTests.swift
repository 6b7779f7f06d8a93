import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Password guessing against the real daemon, with tiny thresholds: the account locks after three failures, the
/// peer after five; another account, and another uid, carry on.
@Suite(.integrationHangGuard)
struct LoginThrottleIntegrationTests {
    static let config = """
        [login_throttle]
        account_free_failures = 2
        account_lockout_failures = 3
        peer_free_failures = 4
        peer_lockout_failures = 5
        lockout = "1h"
        forget_after = "2h"

        [[access.rule]]
        uid = 65534
        allow = ["manage", "read"]
        """

    static func emailPassword(_ email: String, _ password: String) -> [String: JSONValue] {
        ["credentials": ["type": "email_password", "email": .string(email), "password": .string(password)]]
    }

    static func login(_ email: String, _ password: String) -> String {
        #"{"id":1,"method":"login","params":{"credentials":"#
            + #"{"type":"email_password","email":"\#(email)","password":"\#(password)"}}}"#
    }

    @Test func afterNWrongPasswordsTheRightOneIsRateLimitedButOthersAreNot() async throws {
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(Self.config)) { daemon in
            try await daemon.start()
            let root = try daemon.connect()
            for email in ["ann@example.com", "bob@example.com"] {
                _ = try await root.result("register", ["email": .string(email), "password": "right-password"])
            }
            for _ in 0..<3 {
                #expect(
                    try await root.errorCode("login", Self.emailPassword("ann@example.com", "wrong"))
                        == "invalid_credentials"
                )
            }

            // The right password, now: refused, with how long to wait.
            let refused = try await root.call("login", Self.emailPassword("ann@example.com", "right-password"))
            let error = try #require(refused["error"])
            #expect(error["code"] == "rate_limited")
            let retryAfter = try #require(error["data"]?["retry_after"]?.intValue)
            #expect((3500...3600).contains(retryAfter))
            #expect(error["message"]?.stringValue?.contains("for this account") == true)

            // Another account from the same peer is unaffected.
            #expect(
                try await root.result("login", Self.emailPassword("bob@example.com", "right-password"))["user"]?[
                    "email"
                ] == "bob@example.com"
            )

            // Two more failures (on an account that does not exist) lock the peer: root cannot log anyone in now...
            for _ in 0..<2 {
                #expect(
                    try await root.errorCode("login", Self.emailPassword("carol@example.com", "guess"))
                        == "invalid_credentials"
                )
            }
            let peerRefused = try await root.call("login", Self.emailPassword("bob@example.com", "right-password"))
            #expect(peerRefused["error"]?["code"] == "rate_limited")
            #expect(peerRefused["error"]?["message"]?.stringValue?.contains("from this user") == true)

            // ...while another uid still can, into ann's account too: root registered it (its owner), and an owner's
            // own failures are counted apart from everyone else's.
            let answers = try await OtherUser.send(
                daemon,
                [Self.login("bob@example.com", "right-password"), Self.login("ann@example.com", "right-password")]
            )
            #expect(answers[0]["result"]?["user"]?["email"] == "bob@example.com", "\(answers[0])")
            #expect(answers[1]["result"]?["user"]?["email"] == "ann@example.com", "\(answers[1])")

            // Every refusal is in the audit log with its retry_after (written off the request path: wait for it).
            func audited() -> [Substring] {
                daemon.log.split(separator: "\n").filter {
                    $0.contains("audit") && $0.contains("action=login") && $0.contains("outcome=rate_limited")
                }
            }
            try await eventually {
                audited().contains { $0.contains("peer.uid=0") && $0.contains("retry_after=") }
            }
        }
    }

    @Test func anotherUIDsLockoutOutlivesARestartAndNeverLocksTheOwnerOut() async throws {
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(Self.config)) { daemon in
            try await daemon.start()
            // Root registers ann: root's uid is ann's owner.
            _ = try await daemon.connect().result(
                "register",
                ["email": "ann@example.com", "password": "right-password"]
            )
            // Another uid guesses until ann is locked out (for everyone but the owner).
            let guesses = try await OtherUser.send(daemon, (0..<3).map { _ in Self.login("ann@example.com", "wrong") })
            #expect(guesses.allSatisfy { $0["error"]?["code"] == "invalid_credentials" }, "\(guesses)")

            // A crash right after the answers (SIGKILL: nothing is written on the way out) forgets neither the
            // lockout nor the owner.
            try await daemon.kill9()
            try await daemon.start()
            let refused = try await OtherUser.send(daemon, [Self.login("ann@example.com", "right-password")])
            #expect(refused.first?["error"]?["code"] == "rate_limited", "\(refused)")
            #expect((3000...3600).contains(refused.first?["error"]?["data"]?["retry_after"]?.intValue ?? 0))
            let owner = try daemon.connect()
            #expect(
                try await owner.result("login", Self.emailPassword("ann@example.com", "right-password"))["user"]?[
                    "email"
                ] == "ann@example.com"
            )
        }
    }

    @Test func badThrottleSettingsAreConfigurationErrors() async throws {
        try await expectConfigurationError(
            "[login_throttle]\naccount_lockout_failures = 0\n",
            naming: "login_throttle.account_lockout_failures"
        )
        try await expectConfigurationError(
            "[login_throttle]\nlockout = \"forever\"\n",
            naming: "login_throttle.lockout"
        )
        try await expectConfigurationError("[login_throttle]\nretries = 3\n", naming: "login_throttle.retries")
    }
}
