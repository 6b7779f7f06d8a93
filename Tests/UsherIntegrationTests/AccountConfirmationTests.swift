import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Confirmation of new accounts with a delivery hook (`confirm = "hook"`), against the real daemon: the hook gets the
/// token on stdin, the account cannot log in until it is confirmed, tokens are single-use, expire, and a resent token
/// replaces the old one.
@Suite(.integrationHangGuard)
struct AccountConfirmationTests {
    static func credentials(_ password: String, email: String = "ann@example.com") -> [String: JSONValue] {
        ["credentials": ["type": "email_password", "email": .string(email), "password": .string(password)]]
    }

    @Test func anAccountLogsInOnceConfirmedWithTheHooksToken() async throws {
        try await AccountHooks.withDaemon { daemon, directory in
            let client = try daemon.connect()
            let registered = try await client.result(
                "register",
                ["email": "ann@example.com", "password": "first secret"]
            )
            #expect(registered["confirmed"] == false)
            let deliveries = try AccountHooks.deliveries(in: directory)
            #expect(deliveries.count == 1)
            #expect(deliveries.first?["email"] == "ann@example.com")
            #expect(deliveries.first?["purpose"] == "confirm")
            let token = try AccountHooks.lastToken(in: directory)
            #expect(token.count >= 43)

            // The right password is told the account waits; a wrong one learns nothing new.
            #expect(try await client.errorCode("login", Self.credentials("first secret")) == "account_unconfirmed")
            #expect(try await client.errorCode("login", Self.credentials("wrong secret")) == "invalid_credentials")

            #expect(try await client.errorCode("confirm_user", ["token": "not-a-token"]) == "invalid_token")
            let confirmed = try await client.result("confirm_user", ["token": .string(token)])
            #expect(confirmed["email"] == "ann@example.com")
            #expect(confirmed["provider"] == "local")
            #expect(try await client.result("login", Self.credentials("first secret"))["user"]?["state"] == "logged_in")
            // Single-use.
            #expect(try await client.errorCode("confirm_user", ["token": .string(token)]) == "invalid_token")
            // Nothing left to resend for a confirmed account: the same answer, and the hook does not run.
            #expect(
                try await client.result("resend_confirmation", ["email": "ann@example.com"]) == ["provider": "local"]
            )
            #expect(try AccountHooks.deliveries(in: directory).count == 1)
            // The token never reaches the log.
            #expect(!daemon.log.contains(token))
            #expect(daemon.log.contains("action=confirm_user"))
        }
    }

    @Test func aResentTokenReplacesTheOldOneAndAnExpiredTokenIsRefused() async throws {
        try await AccountHooks.withDaemon { daemon, directory in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "first secret"])
            let first = try AccountHooks.lastToken(in: directory)
            let resent = try await client.result("resend_confirmation", ["email": "Ann@Example.com"])
            #expect(resent == ["provider": "local"])
            let second = try AccountHooks.lastToken(in: directory)
            #expect(second != first)
            #expect(try AccountHooks.deliveries(in: directory).last?["email"] == "ann@example.com")
            #expect(try await client.errorCode("confirm_user", ["token": .string(first)]) == "invalid_token")
            // An email without an account: the same answer, and no delivery.
            #expect(
                try await client.result("resend_confirmation", ["email": "nobody@example.com"]) == ["provider": "local"]
            )
            #expect(try AccountHooks.deliveries(in: directory).count == 2)
            _ = try await client.result("confirm_user", ["token": .string(second)])
            _ = try await client.result("login", Self.credentials("first secret"))

            // Provider `brief` issues tokens that expire a millisecond later: by the time the hook has run and the
            // token is read, it has expired.
            _ = try await client.result(
                "register",
                ["provider": "brief", "email": "bob@example.com", "password": "bob secret"]
            )
            let expired = try AccountHooks.lastToken(in: directory)
            #expect(
                try await client.errorCode("confirm_user", ["provider": "brief", "token": .string(expired)])
                    == "invalid_token"
            )
            var bob = Self.credentials("bob secret", email: "bob@example.com")
            bob["provider"] = "brief"
            #expect(try await client.errorCode("login", bob) == "account_unconfirmed")
            // A token of one provider does nothing at another.
            _ = try await client.result("resend_confirmation", ["provider": "brief", "email": "bob@example.com"])
            let elsewhere = try AccountHooks.lastToken(in: directory)
            #expect(try await client.errorCode("confirm_user", ["token": .string(elsewhere)]) == "invalid_token")
        }
    }

    @Test func aConfirmationHookThatFailsLeavesTheAccountToResend() async throws {
        let directory = try TestDirectory()
        let hook = try AccountHooks.install(in: directory)
        try directory.writeExecutable("fail.sh", "#!/bin/sh\n/usr/bin/cat > /dev/null\nexit 3\n")
        let config = """
            [providers.local]
            type = "local"

            [providers.local.registration]
            confirm = "hook"
            confirm_hook = ["\(directory.file("fail.sh"))"]
            """
        let daemon = try DaemonProcess(config: config, directory: directory)
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let client = try daemon.connect()
            let failed = try await client.call("register", ["email": "ann@example.com", "password": "first secret"])
            #expect(failed["error"]?["code"] == "provider_unavailable")
            #expect(failed["error"]?["message"]?.stringValue?.contains("resend_confirmation") == true)
            #expect(daemon.log.contains("exited with status 3"))
            #expect(try await client.errorCode("login", Self.credentials("first secret")) == "account_unconfirmed")
            // Without a reset_hook, self-service resets are turned off.
            #expect(
                try await client.errorCode("request_password_reset", ["email": "ann@example.com"])
                    == "unsupported_credentials"
            )

            // Once the hook works (a reload), resending delivers a token that confirms the account.
            try directory.write("usherd.toml", config.replacingOccurrences(of: directory.file("fail.sh"), with: hook))
            let before = daemon.log.components(separatedBy: "configuration reloaded").count
            kill(daemon.pid, SIGHUP)
            try await eventually { daemon.log.components(separatedBy: "configuration reloaded").count > before }
            _ = try await client.result("resend_confirmation", ["email": "ann@example.com"])
            _ = try await client.result("confirm_user", ["token": .string(try AccountHooks.lastToken(in: directory))])
            _ = try await client.result("login", Self.credentials("first secret"))
        }
    }

    @Test func usherConfirmAndResendConfirmationReadTheTokenFromStdin() async throws {
        try await AccountHooks.withDaemon { daemon, directory in
            let register = try await CLITests.usher(
                daemon,
                ["register", "--email", "ann@example.com", "--password-stdin"],
                stdin: "first secret\n"
            )
            #expect(register.status == 0, "\(register.stderr)")
            #expect(register.stdout.contains("usher confirm"))
            let resend = try await CLITests.usher(daemon, ["resend-confirmation", "ann@example.com"])
            #expect(resend.status == 0, "\(resend.stderr)")
            #expect(resend.stdout.contains("If ann@example.com has an unconfirmed account at local"))
            let token = try AccountHooks.lastToken(in: directory)
            let wrong = try await CLITests.usher(daemon, ["confirm", "--token-stdin"], stdin: "nope\n")
            #expect(wrong.status == 1)
            #expect(wrong.stderr.contains("invalid_token"))
            let confirm = try await CLITests.usher(daemon, ["confirm", "--token-stdin"], stdin: token + "\n")
            #expect(confirm.status == 0, "\(confirm.stderr)")
            #expect(confirm.stdout.contains("Confirmed ann@example.com at local."))
            let client = try daemon.connect()
            _ = try await client.result("login", Self.credentials("first secret"))
        }
    }
}
