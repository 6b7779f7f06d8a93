import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `delete_user` and `usher delete` against the real daemon (issue 21, part 2), local provider: the account goes with
/// its password, API keys and grants; the user leaves the device; only its own uid (or a privileged one) may do it.
@Suite(.integrationHangGuard)
struct DeleteUserTests {
    static func credentials(_ email: String, _ password: String = "secret one") -> JSONValue {
        ["type": "email_password", "email": .string(email), "password": .string(password)]
    }

    @Test func theLocalAccountIsDeletedAndItsCredentialsStopWorking() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            let ann = try await client.result("login", ["credentials": Self.credentials("ann@example.com")])
            let annID = try #require(ann["user"]?["id"]?.stringValue)
            let key = try #require(try await client.result("create_api_key", ["name": "ci"])["key"]?.stringValue)
            _ = try await client.result("register", ["email": "bob@example.com", "password": "secret one"])
            let bob = try await client.result("login", ["credentials": Self.credentials("bob@example.com")])
            let bobID = try #require(bob["user"]?["id"]?.stringValue)
            _ = try await client.result("switch_user", ["user_id": .string(annID)])
            _ = try await watcher.result("subscribe", ["events": ["user_removed", "active_user_changed"]])

            let deleted = try await client.result("delete_user", ["user_id": .string(annID)])
            #expect(deleted["user_id"]?.stringValue == annID)
            #expect(deleted["deleted"]?.arrayValue?.first?["kind"] == "email_password")
            var event = try await watcher.nextEvent()
            while event["event"] != "user_removed" { event = try await watcher.nextEvent() }
            #expect(event["data"]?["user_id"]?.stringValue == annID)
            #expect(event["data"]?["reason"] == "deleted")
            // The successor rule: Bob, the most recently active logged-in user, takes over.
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == bobID)

            // Gone for good, across a restart: the password, the API key; the email is free again, for a new account.
            try await daemon.restart()
            let after = try daemon.connect()
            #expect(
                try await after.errorCode("login", ["credentials": Self.credentials("ann@example.com")])
                    == "invalid_credentials"
            )
            #expect(
                try await after.errorCode("login", ["credentials": ["type": "api_key", "key": .string(key)]])
                    == "invalid_credentials"
            )
            _ = try await after.result("register", ["email": "ann@example.com", "password": "secret two"])
            let fresh = try await after.result(
                "login",
                ["credentials": Self.credentials("ann@example.com", "secret two")]
            )
            #expect(fresh["user"]?["id"]?.stringValue != annID)
            #expect(daemon.log.contains("action=delete_user"))
        }
    }

    @Test func aLinkedGuestIsDeletedWithEveryIdentity() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            let guest = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let guestID = try #require(guest["user"]?["id"]?.stringValue)
            _ = try await client.result("link_credentials", ["credentials": Self.credentials("ann@example.com")])
            let deleted = try await client.result("delete_user", ["user_id": .string(guestID)])
            #expect(deleted["deleted"]?.arrayValue?.count == 2)
            #expect(
                try await client.errorCode("login", ["credentials": Self.credentials("ann@example.com")])
                    == "invalid_credentials"
            )
            #expect(try await client.result("list_users")["users"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test func aLoggedOutUserCannotBeDeleted() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            let ann = try await client.result("login", ["credentials": Self.credentials("ann@example.com")])
            let annID = try #require(ann["user"]?["id"]?.stringValue)
            _ = try await client.result("logout")
            #expect(try await client.errorCode("delete_user", ["user_id": .string(annID)]) == "user_logged_out")
            #expect(try await client.errorCode("delete_user", ["user_id": "u_nobody"]) == "user_not_found")
            // Nothing was deleted: the password still logs in.
            #expect(
                try await client.result("login", ["credentials": Self.credentials("ann@example.com")])["user"]?["id"]
                    == .string(annID)
            )
        }
    }

    @Test func aBlockLeaseRefusesTheDeletionBeforeAnythingIsDeleted() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            let ann = try await client.result("login", ["credentials": Self.credentials("ann@example.com")])
            let annID = try #require(ann["user"]?["id"]?.stringValue)
            let holder = try daemon.connect()
            _ = try await holder.result("inhibit", ["mode": "block", "who": "kiosk", "why": "card payment"])
            #expect(try await client.errorCode("delete_user", ["user_id": .string(annID)]) == "inhibited")
            // Nothing was deleted: the account still logs in, as the same user.
            let again = try await client.result("login", ["credentials": Self.credentials("ann@example.com")])
            #expect(again["user"]?["id"]?.stringValue == annID)
            holder.close()
            // Once the lease is gone (its connection closed), the deletion goes through.
            try await eventually { try await client.result("list_leases")["leases"]?.arrayValue?.isEmpty == true }
            #expect(try await client.result("delete_user", ["user_id": .string(annID)])["user_id"] == .string(annID))
        }
    }

    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func aPeerDeletesOnlyTheUsersItLoggedInItself() async throws {
        let rule = "[[access.rule]]\nuid = 65534\nallow = [\"read\", \"token\", \"manage\"]\n"
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(rule)) { daemon in
            try await daemon.start()
            let root = try daemon.connect()
            _ = try await root.result("register", ["email": "ann@example.com", "password": "secret one"])
            _ = try await root.result("register", ["email": "bob@example.com", "password": "secret one"])
            let ann = try await root.result("login", ["credentials": Self.credentials("ann@example.com")])
            let annID = try #require(ann["user"]?["id"]?.stringValue)

            let nobody = try await OtherUser.connect(path: daemon.socketPath)
            nobody.timeout = .seconds(60)
            let refused = try await nobody.call("delete_user", ["user_id": .string(annID)])
            #expect(refused["error"]?["code"] == "permission_denied", "\(refused)")
            let bob = try await nobody.result("login", ["credentials": Self.credentials("bob@example.com")])
            let bobID = try #require(bob["user"]?["id"]?.stringValue)
            #expect(try await nobody.result("delete_user", ["user_id": .string(bobID)])["user_id"] == .string(bobID))
            // Root deletes anyone's.
            #expect(try await root.result("delete_user", ["user_id": .string(annID)])["user_id"] == .string(annID))
        }
    }

    @Test func usherDeleteAsksFirstAndNeedsYesWithoutATerminal() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            _ = try await client.result("login", ["credentials": Self.credentials("ann@example.com")])
            let unasked = try await CLITests.usher(daemon, ["delete", "ann@example.com"], stdin: "")
            #expect(unasked.status == 2, "\(unasked.stderr)")
            #expect(unasked.stderr.contains("--yes"))
            #expect(try await client.result("current_user")["user"]?["email"] == "ann@example.com")
            let run = try await CLITests.usher(daemon, ["delete", "ann@example.com", "--yes"], stdin: "")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("Deleted"))
            #expect(
                try await client.errorCode("login", ["credentials": Self.credentials("ann@example.com")])
                    == "invalid_credentials"
            )
        }
    }
}
