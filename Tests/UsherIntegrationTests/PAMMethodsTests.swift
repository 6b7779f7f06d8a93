import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The methods `pam_usher` uses, against the real daemon: `login` with `expect_email` and `activate`, `open_session`,
/// `close_session` and `user_status`.
@Suite(.integrationHangGuard)
struct PAMMethodsTests {
    static func credentials(_ email: String, _ password: String = "secret123") -> [String: JSONValue] {
        ["type": "email_password", "email": .string(email), "password": .string(password)]
    }

    static func register(_ client: LineConnection, _ emails: String...) async throws {
        for email in emails {
            _ = try await client.result("register", ["email": .string(email), "password": "secret123"])
        }
    }

    @Test func theAuthStageLogsInWithoutTakingTheSeatAndOnlyTheExpectedAccount() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "ann@example.com", "bob@example.com", "carol@example.com")
            let bob = try await client.result("login", ["credentials": .object(Self.credentials("bob@example.com"))])
            let bobID = try #require(bob["user"]?["id"]?.stringValue)

            // `su ann` in bob's session: ann is logged in, bob stays the seat's active user.
            let ann = try await client.result(
                "login",
                [
                    "credentials": .object(Self.credentials("ann@example.com")), "expect_email": "Ann@Example.com",
                    "activate": false,
                ]
            )
            #expect(ann["user"]?["state"] == "logged_in")
            #expect(ann["user"]?["active"] == false)
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == bobID)

            // Carol's password typed for ann: refused before anything is committed.
            let before = try await client.result("list_users")
            let mismatch = try await client.call(
                "login",
                ["credentials": .object(Self.credentials("carol@example.com")), "expect_email": "ann@example.com"]
            )
            #expect(mismatch["error"]?["code"] == "identity_mismatch", "\(mismatch)")
            #expect(mismatch["error"]?["message"]?.stringValue?.contains("carol@example.com") == true)
            #expect(try await client.result("list_users") == before)
            #expect(daemon.log.contains("outcome=identity_mismatch") || daemon.log.contains("identity_mismatch"))
        }
    }

    @Test func anIdentityMismatchCountsAsAFailedLoginOfTheExpectedAccount() async throws {
        let config = "[login_throttle]\naccount_free_failures = 0\nfirst_delay = \"1h\"\nmax_delay = \"1h\"\n"
        try await DaemonProcess.with(config: config) { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "ann@example.com", "carol@example.com")
            let params: [String: JSONValue] = [
                "credentials": .object(Self.credentials("carol@example.com")), "expect_email": "ann@example.com",
            ]
            #expect(try await client.errorCode("login", params) == "identity_mismatch")
            let refused = try await client.call("login", ["credentials": .object(Self.credentials("ann@example.com"))])
            #expect(refused["error"]?["code"] == "rate_limited", "\(refused)")
        }
    }

    @Test func openSessionTakesTheSeatRecordsABindingAndCloseSessionAppliesOnClose() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "ann@example.com", "bob@example.com")
            let annID = try #require(
                try await client.result(
                    "login",
                    ["credentials": .object(Self.credentials("ann@example.com")), "activate": false]
                )["user"]?["id"]?.stringValue
            )
            _ = try await client.result("login", ["credentials": .object(Self.credentials("bob@example.com"))])

            // By email, as a session stage in another process than the login asks.
            let opened = try await client.result(
                "open_session",
                ["user": "ann@example.com", "logind_session": "c7", "service": "login"]
            )
            let binding = try #require(opened["binding"]?.stringValue)
            #expect(binding.hasPrefix("b_"))
            #expect(opened["user"]?["id"]?.stringValue == annID)
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == annID)
            #expect(try await client.result("user_status", ["email": "ann@example.com"])["status"] == "logged_in")

            // The binding survives a restart; on_close=logout then logs ann out, and user_status says why.
            client.close()
            try await daemon.restart()
            let after = try daemon.connect()
            let closed = try await after.result("close_session", ["binding": .string(binding), "on_close": "logout"])
            #expect(closed["user_id"]?.stringValue == annID)
            #expect(closed["on_close"] == "logout")
            let status = try await after.result("user_status", ["email": "ANN@example.com"])
            #expect(status["status"] == "logged_out")
            #expect(status["ended"] == "requested")
            #expect(status["user_id"]?.stringValue == annID)
            #expect(try await after.errorCode("close_session", ["binding": .string(binding)]) == "invalid_params")
            #expect(try await after.result("user_status", ["email": "nobody@example.com"])["status"] == "unknown")
            #expect(
                try await after.errorCode("close_session", ["binding": "b_1", "on_close": "never"]) == "invalid_params"
            )
        }
    }

    @Test func onCloseRemoveRemovesTheUserAndKeepKeepsItLoggedIn() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "ann@example.com")
            let annID = try #require(
                try await client.result("login", ["credentials": .object(Self.credentials("ann@example.com"))])[
                    "user"
                ]?[
                    "id"
                ]?.stringValue
            )
            let first = try #require(
                try await client.result("open_session", ["user": .string(annID)])["binding"]?.stringValue
            )
            _ = try await client.result("close_session", ["binding": .string(first)])
            #expect(try await client.result("user_status", ["email": "ann@example.com"])["status"] == "logged_in")

            let second = try #require(
                try await client.result("open_session", ["user": .string(annID)])["binding"]?.stringValue
            )
            _ = try await client.result("close_session", ["binding": .string(second), "on_close": "remove"])
            #expect(try await client.result("list_users")["users"]?.arrayValue?.isEmpty == true)
            #expect(try await client.result("user_status", ["email": "ann@example.com"])["status"] == "unknown")
        }
    }

    @Test func aBlockLeaseRefusesOpenSessionAndNamesItsHolder() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let holder = try daemon.connect()
            try await Self.register(client, "ann@example.com", "bob@example.com")
            let annID = try #require(
                try await client.result(
                    "login",
                    ["credentials": .object(Self.credentials("ann@example.com")), "activate": false]
                )["user"]?["id"]?.stringValue
            )
            let bob = try await client.result("login", ["credentials": .object(Self.credentials("bob@example.com"))])
            let lease = try await holder.result("inhibit", ["mode": "block", "who": "presenter", "why": "a talk"])

            let refused = try await client.call("open_session", ["user": .string(annID)])
            #expect(refused["error"]?["code"] == "inhibited", "\(refused)")
            #expect(refused["error"]?["data"]?["holders"]?.arrayValue?.first?["who"] == "presenter")
            #expect(try await client.result("current_user")["user"]?["id"] == bob["user"]?["id"])
            // A user that is not logged in has no session to open.
            _ = try await holder.result("release", ["lease": try #require(lease["lease"])])
            _ = try await client.result("logout", ["user_id": .string(annID)])
            #expect(try await client.errorCode("open_session", ["user": .string(annID)]) == "user_logged_out")
            #expect(try await client.errorCode("open_session", ["user": "nobody@example.com"]) == "user_not_found")
            #expect(try await client.errorCode("open_session", ["user": "a\u{1b}[2J"]) == "invalid_params")
        }
    }

    /// With `[unix_users]`, the PAM user may be the Unix name usherd gives the account (`bob` for bob@example.com):
    /// `user_status` finds the account by it, and the session stage works with it too.
    @Test func userStatusFindsTheAccountOfAUnixUserUsherServes() async throws {
        try await DaemonProcess.with(config: "[unix_users]\nenabled = true\nuid_range = \"60200-60299\"\n") { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "bob@example.com")
            #expect(try await client.result("user_status", ["unix_user": "bob"])["status"] == "unknown")
            let bob = try await client.result(
                "login",
                ["credentials": .object(Self.credentials("bob@example.com")), "activate": false]
            )
            let status = try await client.result("user_status", ["unix_user": "bob"])
            #expect(status["status"] == "logged_in")
            #expect(status["email"] == "bob@example.com")
            #expect(status["user_id"] == bob["user"]?["id"])
            #expect(try await client.result("user_status", ["unix_user": "root"])["status"] == "unknown")
            // The session stage and the account stage read the same store with [unix_users] as without it.
            let opened = try await client.result("open_session", ["user": "bob@example.com", "logind_session": "c3"])
            #expect(opened["user"]?["id"] == bob["user"]?["id"])
            _ = try await client.result(
                "close_session",
                ["binding": try #require(opened["binding"]), "on_close": "logout"]
            )
            #expect(try await client.result("user_status", ["unix_user": "bob"])["ended"] == "requested")
        }
    }
}
