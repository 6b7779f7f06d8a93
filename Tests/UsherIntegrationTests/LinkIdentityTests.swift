import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Linked identities against the real daemon (issue 21, part 1): a guest signs up and keeps its id; logging in with
/// any linked identity finds the same user; the refusals; unlinking.
@Suite(.integrationHangGuard)
struct LinkIdentityTests {
    static func emailCredentials(_ email: String, _ password: String = "secret one") -> JSONValue {
        ["type": "email_password", "email": .string(email), "password": .string(password)]
    }

    static func identities(_ user: JSONValue?) -> [[String: String]] {
        guard case .array(let list)? = user?["identities"] else { return [] }
        return list.map { identity in
            var fields: [String: String] = [:]
            for key in ["provider", "kind", "subject"] { fields[key] = identity[key]?.stringValue }
            return fields
        }
    }

    @Test func aGuestLinksAnEmailAccountAndKeepsItsID() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["user_changed", "user_removed", "user_logged_out"]])
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            let guest = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let guestID = try #require(guest["user"]?["id"]?.stringValue)
            #expect(Self.identities(guest["user"]).map { $0["kind"] } == ["anonymous"])

            let linked = try await client.result(
                "link_credentials",
                ["credentials": Self.emailCredentials("ann@example.com")]
            )
            #expect(linked["user"]?["id"]?.stringValue == guestID)
            #expect(linked["user"]?["kind"] == "email_password")
            #expect(linked["user"]?["email"] == "ann@example.com")
            #expect(linked["user"]?["active"] == true)
            #expect(Self.identities(linked["user"]).map { $0["kind"] } == ["email_password", "anonymous"])
            let changed = try await watcher.nextEvent()
            #expect(changed["event"] == "user_changed")
            #expect(changed["data"]?["user"]?["id"]?.stringValue == guestID)

            // The session's token names the user: resource servers that keyed the guest's data by it keep it.
            let token = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            #expect(try JWTPayload.claims(of: token)["sub"]?.stringValue == guestID)

            // No longer anonymous: logging out keeps it, and an anonymous login makes a new guest.
            let out = try await client.result("logout")
            #expect(out["user"]?["state"] == "logged_out")
            let loggedOut = try await watcher.nextEvent()
            #expect(loggedOut["event"] == "user_logged_out")
            let newGuest = try await client.result("login", ["credentials": ["type": "anonymous"]])
            #expect(newGuest["user"]?["id"]?.stringValue != guestID)

            // Logging in with the linked email finds the same user, whatever its state.
            let again = try await client.result("login", ["credentials": Self.emailCredentials("ann@example.com")])
            #expect(again["user"]?["id"]?.stringValue == guestID)
            #expect(again["user"]?["state"] == "logged_in")
            #expect(again["user"]?["active"] == true)

            // ...and after a restart, and after remove_user: the id survives.
            try await daemon.restart()
            let after = try daemon.connect()
            #expect(Self.identities(try await after.result("current_user")["user"]).count == 2)
            _ = try await after.result("remove_user", ["user_id": .string(guestID)])
            let back = try await after.result("login", ["credentials": Self.emailCredentials("ann@example.com")])
            #expect(back["user"]?["id"]?.stringValue == guestID)
            #expect(Self.identities(back["user"]).map { $0["kind"] } == ["email_password", "anonymous"])
        }
    }

    @Test func refusalsLeaveEveryUserAsItWas() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            _ = try await client.result("register", ["email": "bob@example.com", "password": "secret one"])
            let ann = try await client.result("login", ["credentials": Self.emailCredentials("ann@example.com")])
            let annID = try #require(ann["user"]?["id"]?.stringValue)
            let bob = try await client.result("login", ["credentials": Self.emailCredentials("bob@example.com")])
            let bobID = try #require(bob["user"]?["id"]?.stringValue)

            let anonymous = try await client.call("link_credentials", ["credentials": ["type": "anonymous"]])
            #expect(anonymous["error"]?["code"] == "invalid_link")
            #expect(anonymous["error"]?["message"]?.stringValue?.contains("anonymous") == true)

            // Ann's identity belongs to Ann: linking it to Bob (the active user) is refused, naming nothing secret.
            let taken = try await client.call(
                "link_credentials",
                ["credentials": Self.emailCredentials("ann@example.com")]
            )
            #expect(taken["error"]?["code"] == "identity_in_use")
            #expect(taken["error"]?["message"]?.stringValue?.contains("ann@example.com") == false)
            let wrong = try await client.call(
                "link_credentials",
                ["user_id": .string(annID), "credentials": Self.emailCredentials("bob@example.com", "guess")]
            )
            #expect(wrong["error"]?["code"] == "invalid_credentials")

            let users = try await client.result("list_users")["users"]
            guard case .array(let list)? = users else {
                throw TestSupportError("no users: \(String(describing: users))")
            }
            #expect(list.count == 2)
            for user in list {
                #expect(Self.identities(user).count == 1)
                #expect(user["state"] == "logged_in")
            }
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == bobID)

            // A logged-out user cannot be linked to.
            _ = try await client.result("logout", ["user_id": .string(annID)])
            _ = try await client.result("register", ["email": "cy@example.com", "password": "secret one"])
            let loggedOut = try await client.call(
                "link_credentials",
                ["user_id": .string(annID), "credentials": Self.emailCredentials("cy@example.com")]
            )
            #expect(loggedOut["error"]?["code"] == "user_logged_out")
        }
    }

    @Test func unlinkingRemovesOneIdentityNeverTheLast() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["user_changed", "user_logged_out"]])
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            _ = try await client.result("register", ["email": "work@example.com", "password": "secret one"])
            let ann = try await client.result("login", ["credentials": Self.emailCredentials("ann@example.com")])
            let annID = try #require(ann["user"]?["id"]?.stringValue)
            let annSubject = try #require(Self.identities(ann["user"]).first?["subject"])
            let linked = try await client.result(
                "link_credentials",
                ["credentials": Self.emailCredentials("work@example.com")]
            )
            #expect(Self.identities(linked["user"]).count == 2)
            _ = try await watcher.nextEvent()
            let workSubject = try #require(Self.identities(linked["user"]).first?["subject"])

            // The identity that is not the session's goes; the session stays.
            let first = try await client.result(
                "unlink_identity",
                ["user_id": .string(annID), "provider": "local", "subject": .string(annSubject)]
            )
            #expect(first["removed"] == false)
            #expect(first["user"]?["state"] == "logged_in")
            #expect(Self.identities(first["user"]).map { $0["subject"] } == [workSubject])
            #expect(try await watcher.nextEvent()["event"] == "user_changed")
            // Ann's email no longer finds this user: it makes a new one.
            let annAgain = try await client.result("login", ["credentials": Self.emailCredentials("ann@example.com")])
            #expect(annAgain["user"]?["id"]?.stringValue != annID)

            let last = try await client.call(
                "unlink_identity",
                ["user_id": .string(annID), "provider": "local", "subject": .string(workSubject)]
            )
            #expect(last["error"]?["code"] == "invalid_link")
            let unknown = try await client.call(
                "unlink_identity",
                ["user_id": .string(annID), "provider": "local", "subject": "nobody"]
            )
            #expect(unknown["error"]?["code"] == "invalid_link")
        }
    }

    @Test func unlinkingTheSessionsIdentityLogsTheSessionOut() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["user_changed", "user_logged_out"]])
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            _ = try await client.result("register", ["email": "work@example.com", "password": "secret one"])
            let ann = try await client.result("login", ["credentials": Self.emailCredentials("ann@example.com")])
            let annID = try #require(ann["user"]?["id"]?.stringValue)
            let linked = try await client.result(
                "link_credentials",
                ["credentials": Self.emailCredentials("work@example.com")]
            )
            _ = try await watcher.nextEvent()
            let workSubject = try #require(Self.identities(linked["user"]).first?["subject"])
            let result = try await client.result(
                "unlink_identity",
                ["user_id": .string(annID), "provider": "local", "subject": .string(workSubject)]
            )
            #expect(result["user"]?["state"] == "logged_out")
            #expect(Self.identities(result["user"]).count == 1)
            let event = try await watcher.nextEvent()
            #expect(event["event"] == "user_logged_out")
            #expect(event["data"]?["reason"] == "identity_unlinked")
            #expect(try await client.errorCode("access_token", ["user_id": .string(annID)]) == "user_logged_out")
            // Ann's own email still logs the same user in.
            let back = try await client.result("login", ["credentials": Self.emailCredentials("ann@example.com")])
            #expect(back["user"]?["id"]?.stringValue == annID)
        }
    }

    @Test func usherLinkTakesLoginsOptionsAndReadsThePasswordFromStdin() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            let guest = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let guestID = try #require(guest["user"]?["id"]?.stringValue)
            let run = try await CLITests.usher(
                daemon,
                ["link", "--email", "ann@example.com", "--password-stdin"],
                stdin: "secret one\n"
            )
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("email_password"))
            #expect(run.stdout.contains("linked"))
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == guestID)
            let refused = try await CLITests.usher(daemon, ["link", "--anonymous"], stdin: "")
            #expect(refused.status == 2)
        }
    }
}
