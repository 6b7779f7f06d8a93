import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The self-service password reset against the real daemon: `request_password_reset` runs the reset hook with a token
/// (only for an email with an account, with the same answer either way), and `complete_password_reset` sets the new
/// password with it and ends the account's sessions on the device.
@Suite(.integrationHangGuard)
struct SelfServiceResetTests {
    static func credentials(_ password: String, email: String = "ann@example.com") -> [String: JSONValue] {
        ["credentials": ["type": "email_password", "email": .string(email), "password": .string(password)]]
    }

    /// Registers and confirms ann (through the hook), logs her in, and returns her user id.
    static func confirmedAnn(_ client: LineConnection, _ directory: TestDirectory) async throws -> String {
        _ = try await client.result("register", ["email": "ann@example.com", "password": "first secret"])
        _ = try await client.result("confirm_user", ["token": .string(try AccountHooks.lastToken(in: directory))])
        let login = try await client.result("login", Self.credentials("first secret"))
        return try #require(login["user"]?["id"]?.stringValue)
    }

    @Test func aResetByTokenSetsThePasswordAndEndsTheSessions() async throws {
        try await AccountHooks.withDaemon { daemon, directory in
            let client = try daemon.connect()
            let subscriber = try daemon.connect()
            let annID = try await Self.confirmedAnn(client, directory)
            _ = try await subscriber.result("subscribe", ["events": ["user_logged_out"]])
            let deliveredBefore = try AccountHooks.deliveries(in: directory).count

            // An unknown email and a known one get the same answer; only the known one gets a delivery.
            let unknown = try await client.result("request_password_reset", ["email": "nobody@example.com"])
            #expect(try AccountHooks.deliveries(in: directory).count == deliveredBefore)
            let known = try await client.result("request_password_reset", ["email": "ann@example.com"])
            #expect(known == unknown)
            let deliveries = try AccountHooks.deliveries(in: directory)
            #expect(deliveries.count == deliveredBefore + 1)
            #expect(deliveries.last?["purpose"] == "reset")
            #expect(deliveries.last?["email"] == "ann@example.com")
            let token = try AccountHooks.lastToken(in: directory)

            #expect(
                try await client.errorCode("complete_password_reset", ["token": "guess", "new_password": "x1234567"])
                    == "invalid_token"
            )
            #expect(
                try await client.errorCode("complete_password_reset", ["token": .string(token), "new_password": "x"])
                    == "invalid_params"
            )
            let reset = try await client.result(
                "complete_password_reset",
                ["token": .string(token), "new_password": "second secret"]
            )
            #expect(reset["email"] == "ann@example.com")
            #expect(reset["logged_out"] == [.string(annID)])
            let event = try await subscriber.nextEvent()
            #expect(event["event"] == "user_logged_out")
            #expect(event["data"]?["user_id"]?.stringValue == annID)
            #expect(event["data"]?["reason"] == "password_reset")

            #expect(try await client.errorCode("login", Self.credentials("first secret")) == "invalid_credentials")
            _ = try await client.result("login", Self.credentials("second secret"))
            // Single-use.
            #expect(
                try await client.errorCode(
                    "complete_password_reset",
                    ["token": .string(token), "new_password": "third secret"]
                ) == "invalid_token"
            )
            #expect(!daemon.log.contains(token) && !daemon.log.contains("second secret"))
        }
    }

    @Test func aNewerRequestOrAnExpiryVoidsAResetToken() async throws {
        try await AccountHooks.withDaemon { daemon, directory in
            let client = try daemon.connect()
            _ = try await Self.confirmedAnn(client, directory)
            _ = try await client.result("request_password_reset", ["email": "ann@example.com"])
            let first = try AccountHooks.lastToken(in: directory)
            _ = try await client.result("request_password_reset", ["email": "ann@example.com"])
            let second = try AccountHooks.lastToken(in: directory)
            #expect(
                try await client.errorCode(
                    "complete_password_reset",
                    ["token": .string(first), "new_password": "second secret"]
                ) == "invalid_token"
            )
            _ = try await client.result(
                "complete_password_reset",
                ["token": .string(second), "new_password": "second secret"]
            )

            // `brief` tokens expire a millisecond after they are made.
            _ = try await client.result(
                "register",
                ["provider": "brief", "email": "bob@example.com", "password": "bob secret"]
            )
            _ = try await client.result("request_password_reset", ["provider": "brief", "email": "bob@example.com"])
            let expired = try AccountHooks.lastToken(in: directory)
            #expect(
                try await client.errorCode(
                    "complete_password_reset",
                    ["provider": "brief", "token": .string(expired), "new_password": "bob's new secret"]
                ) == "invalid_token"
            )
        }
    }

    @Test func requestsAreThrottledSoThatTheyCannotFloodTheHook() async throws {
        // Two free requests, then an hour's wait (an hour never passes during the test: the refusal is the state).
        let throttle = """
            [login_throttle]
            account_free_failures = 2
            first_delay = "1h"
            max_delay = "1h"
            """
        try await AccountHooks.withDaemon(extra: throttle) { daemon, directory in
            let client = try daemon.connect()
            _ = try await Self.confirmedAnn(client, directory)
            let before = try AccountHooks.deliveries(in: directory).count
            for _ in 0..<3 { _ = try await client.result("request_password_reset", ["email": "ann@example.com"]) }
            #expect(
                try await client.errorCode("request_password_reset", ["email": "ann@example.com"]) == "rate_limited"
            )
            #expect(try AccountHooks.deliveries(in: directory).count == before + 3)
            // The email's requests are counted apart from its logins: ann still logs in.
            _ = try await client.result("login", Self.credentials("first secret"))
        }
    }

    @Test func usherResetPasswordAsksForATokenAndUsesOneFromStdin() async throws {
        try await AccountHooks.withDaemon { daemon, directory in
            let client = try daemon.connect()
            let annID = try await Self.confirmedAnn(client, directory)
            let request = try await CLITests.usher(daemon, ["reset-password", "ann@example.com"])
            #expect(request.status == 0, "\(request.stderr)")
            #expect(request.stdout.contains("If ann@example.com has an account at local, a reset token is on its way."))
            let token = try AccountHooks.lastToken(in: directory)
            let oneLine = try await CLITests.usher(
                daemon,
                ["reset-password", "--token", "--token-stdin"],
                stdin: token + "\n"
            )
            #expect(oneLine.status == 1)
            #expect(oneLine.stderr.contains("first two lines"))
            let both = try await CLITests.usher(daemon, ["reset-password", "ann@example.com", "--token"])
            #expect(both.status != 0)
            let complete = try await CLITests.usher(
                daemon,
                ["reset-password", "--token", "--token-stdin"],
                stdin: token + "\nsecond secret\n"
            )
            #expect(complete.status == 0, "\(complete.stderr)")
            #expect(complete.stdout.contains("Set a new password for ann@example.com at local."))
            #expect(complete.stdout.contains("Logged out ann@example.com."), "\(complete.stdout)")
            #expect(!complete.stdout.contains(annID))
            _ = try await client.result("login", Self.credentials("second secret"))
        }
    }
}
