import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Whose user a peer may change (docs/protocol.md, "Whose user"; issue 36, items 1, 2 and 13), against the real daemon
/// with real uids: root, `nobody` (65534) with `manage` everywhere, and uid 4242 with `manage` on one seat only. Every
/// method that changes who a user is (link, unlink, delete, API keys, password reset) is tried as a uid that does not
/// own the user.
@Suite(.integrationHangGuard, .enabled(if: OtherUser.unavailableReason == nil, "acting as other uids needs root"))
struct OwnershipTests {
    static let seatUID: UInt32 = 4242
    static let rules = """
        [[access.rule]]
        uid = 65534
        allow = ["read", "token", "manage"]
        [[access.rule]]
        uid = 4242
        seats = ["seat0"]
        allow = ["read", "token", "manage"]
        """

    static func credentials(_ email: String, _ password: String = "secret one") -> JSONValue {
        ["type": "email_password", "email": .string(email), "password": .string(password)]
    }

    /// A daemon other uids can reach, with ann (logged in by root), and accounts for mallory and bob.
    static func withAnn(
        extra: String = "",
        _ body: (DaemonProcess, LineConnection, String) async throws -> Void
    ) async throws {
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(Self.rules + "\n" + extra)) {
            daemon in
            try await daemon.start()
            let root = try daemon.connect()
            root.timeout = .seconds(120)
            for email in ["ann@example.com", "mallory@example.com", "bob@example.com"] {
                _ = try await root.result("register", ["email": .string(email), "password": "secret one"])
            }
            let ann = try await root.result("login", ["credentials": Self.credentials("ann@example.com")])
            try await body(daemon, root, try #require(ann["user"]?["id"]?.stringValue))
        }
    }

    static func connect(_ daemon: DaemonProcess, uid: UInt32 = OtherUser.nobody) async throws -> LineConnection {
        let connection = try await OtherUser.connect(path: daemon.socketPath, uid: uid, gid: uid)
        connection.timeout = .seconds(120)
        return connection
    }

    /// The error code of a call, with the whole answer in the failure's message.
    static func refusal(
        _ connection: LineConnection,
        _ method: String,
        _ params: [String: JSONValue]
    ) async throws
        -> String?
    {
        let answer = try await connection.call(method, params)
        return answer["error"]?["code"]?.stringValue
    }

    static func identities(_ root: LineConnection, _ userID: String) async throws -> [String] {
        let users = try #require(try await root.result("list_users")["users"]?.arrayValue)
        let user = try #require(users.first { $0["id"]?.stringValue == userID })
        return (user["identities"]?.arrayValue ?? []).compactMap { $0["subject"]?.stringValue }
    }

    @Test func anotherUidCannotLinkItsCredentialsToAUserItDidNotLogIn() async throws {
        try await Self.withAnn { daemon, root, annID in
            let before = try await Self.identities(root, annID)
            for uid in [OtherUser.nobody, Self.seatUID] {
                let peer = try await Self.connect(daemon, uid: uid)
                let linked = try await peer.call(
                    "link_credentials",
                    ["user_id": .string(annID), "credentials": Self.credentials("mallory@example.com")]
                )
                #expect(linked["error"]?["code"] == "permission_denied", "uid \(uid): \(linked)")
                #expect(linked["error"]?["message"]?.stringValue?.contains("opened by another uid") == true)
                // Nor through an interactive login's link_to: refused before any login id is looked at.
                let waited = try await peer.call("login_wait", ["login_id": "local.x", "link_to": .string(annID)])
                #expect(waited["error"]?["code"] == "permission_denied", "uid \(uid): \(waited)")
            }
            #expect(try await Self.identities(root, annID) == before)
            // Mallory's password still logs in as a user of its own, not as ann.
            let mallory = try await root.result("login", ["credentials": Self.credentials("mallory@example.com")])
            #expect(mallory["user"]?["id"]?.stringValue != annID)
            // Nobody cannot delete ann either: linking gave it nothing.
            let nobody = try await Self.connect(daemon)
            #expect(try await Self.refusal(nobody, "delete_user", ["user_id": .string(annID)]) == "permission_denied")
        }
    }

    @Test func aLinkKeepsWhoOpenedTheSession() async throws {
        try await Self.withAnn { daemon, root, _ in
            let nobody = try await Self.connect(daemon)
            let bob = try await nobody.result("login", ["credentials": Self.credentials("bob@example.com")])
            let bobID = try #require(bob["user"]?["id"]?.stringValue)
            // Root (privileged) links mallory's account to bob: the session stays nobody's.
            _ = try await root.result(
                "link_credentials",
                ["user_id": .string(bobID), "credentials": Self.credentials("mallory@example.com")]
            )
            #expect(try await Self.identities(root, bobID).count == 2)
            // Nobody still owns bob: it unlinks the identity root added, and deletes its own user.
            let subjects = try await Self.identities(root, bobID)
            let unlinked = try await nobody.call(
                "unlink_identity",
                ["user_id": .string(bobID), "provider": "local", "subject": .string(subjects[1])]
            )
            #expect(unlinked["error"] == nil, "\(unlinked)")
            #expect(try await nobody.result("delete_user", ["user_id": .string(bobID)])["user_id"] == .string(bobID))
        }
    }

    @Test func unlinkingAndAPIKeysAreTheOwnersOnly() async throws {
        try await Self.withAnn { daemon, root, annID in
            let subject = try #require(try await Self.identities(root, annID).first)
            let planted = try await root.result("create_api_key", ["user_id": .string(annID), "name": "by-root"])
            #expect(planted["key"]?.stringValue != nil)
            let nobody = try await Self.connect(daemon)
            let refused: [(String, [String: JSONValue])] = [
                ("unlink_identity", ["user_id": .string(annID), "provider": "local", "subject": .string(subject)]),
                ("create_api_key", ["user_id": .string(annID), "name": "planted"]),
                ("list_api_keys", ["user_id": .string(annID)]),
                ("delete_api_key", ["user_id": .string(annID), "name": "by-root"]),
                ("delete_user", ["user_id": .string(annID)]),
            ]
            for (method, params) in refused {
                let answer = try await nobody.call(method, params)
                #expect(answer["error"]?["code"] == "permission_denied", "\(method): \(answer)")
            }
            // Nothing changed: ann keeps its identity and only root's key.
            #expect(try await Self.identities(root, annID) == [subject])
            let keys = try await root.result("list_api_keys", ["user_id": .string(annID)])
            #expect(keys["api_keys"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["by-root"])
            // A refused attempt is audited as denied, naming the user.
            try await eventually { daemon.log.contains("action=create_api_key outcome=permission_denied") }

            // Its own user's keys are nobody's to manage.
            let bob = try await nobody.result("login", ["credentials": Self.credentials("bob@example.com")])
            let bobID = try #require(bob["user"]?["id"]?.stringValue)
            let key = try await nobody.result("create_api_key", ["user_id": .string(bobID), "name": "laptop"])
            #expect(key["key"]?.stringValue != nil)
            let listed = try await nobody.result("list_api_keys", ["user_id": .string(bobID)])
            #expect(listed["api_keys"]?.arrayValue?.count == 1)
            _ = try await nobody.result("delete_api_key", ["user_id": .string(bobID), "name": "laptop"])
        }
    }

    @Test func resetPasswordIsAnAdministratorsActAndIsThrottled() async throws {
        let throttle = "[login_throttle]\npeer_free_failures = 3\nfirst_delay = \"1h\"\nmax_delay = \"1h\"\n"
        try await Self.withAnn(extra: throttle) { daemon, root, annID in
            let nobody = try await Self.connect(daemon)
            let refused = try await nobody.call(
                "reset_password",
                ["email": "ann@example.com", "new_password": "taken over"]
            )
            #expect(refused["error"]?["code"] == "permission_denied", "\(refused)")
            #expect(refused["error"]?["message"]?.stringValue?.contains("administrator") == true)
            try await eventually { daemon.log.contains("action=reset_password outcome=denied") }
            // Ann's password is unchanged and her session goes on.
            #expect(try await root.result("current_user")["user"]?["id"]?.stringValue == annID)

            // Root may, and its guesses at which emails have accounts count against it: past the free failures (the
            // first failure beyond them starts the wait), it waits like any guesser.
            for index in 0..<4 {
                let answer = try await root.call(
                    "reset_password",
                    ["email": .string("nobody\(index)@example.com"), "new_password": "a new password"]
                )
                #expect(answer["error"]?["code"] == "invalid_credentials", "\(answer)")
            }
            let throttled = try await root.call(
                "reset_password",
                ["email": "ann@example.com", "new_password": "a new password"]
            )
            #expect(throttled["error"]?["code"] == "rate_limited", "\(throttled)")
            // The throttled attempt changed nothing: ann's old password still works.
            let again = try await nobody.call("login", ["credentials": Self.credentials("ann@example.com")])
            #expect(again["result"] != nil, "\(again)")
        }
    }

    @Test func anotherUidCannotUseUpTheOwnersResetMail() async throws {
        let directory = try TestDirectory()
        let hook = try AccountHooks.install(in: directory)
        let config =
            Self.rules + "\n[login_throttle]\naccount_free_failures = 2\nfirst_delay = \"1h\"\n"
            + "max_delay = \"1h\"\npeer_free_failures = 1000\n"
        let daemon = try await AccessPolicyTests.reachableDaemon(AccountHooks.config(hook: hook, extra: config))
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let root = try daemon.connect()
            root.timeout = .seconds(120)
            _ = try await root.result("register", ["email": "ann@example.com", "password": "secret one"])
            let token = try AccountHooks.lastToken(in: directory)
            _ = try await root.result("confirm_user", ["token": .string(token)])
            // Ann's owner is uid 4242: it logged in to the account last.
            let owner = try await Self.connect(daemon, uid: Self.seatUID)
            _ = try await owner.result("login", ["credentials": Self.credentials("ann@example.com")])

            // Nobody asks for ann's reset mail until the others' count of it is spent.
            let nobody = try await Self.connect(daemon)
            var codes: [String?] = []
            for _ in 0..<4 {
                let answer = try await nobody.call("request_password_reset", ["email": "ann@example.com"])
                codes.append(answer["error"]?["code"]?.stringValue)
            }
            #expect(codes.last == "rate_limited", "\(codes)")
            // The owner still gets its own mail.
            let mails = try AccountHooks.deliveries(in: directory).count
            let asked = try await owner.call("request_password_reset", ["email": "ann@example.com"])
            #expect(asked["error"] == nil, "\(asked)")
            #expect(try AccountHooks.deliveries(in: directory).count == mails + 1)
        }
    }

    /// pam_usher logs in as root and names the person's uid when the session opens: that uid owns the user from then
    /// on (its own `set_pin` works), and no uid but root's or usherd's may name one.
    @Test func openSessionHandsTheUserToTheUidRootNamesAndOnlyRootMayName() async throws {
        try await Self.withAnn { daemon, root, annID in
            let peer = try await Self.connect(daemon)
            #expect(
                try await Self.refusal(peer, "set_pin", ["user_id": .string(annID), "pin": "4711"])
                    == "permission_denied"
            )
            let named: [String: JSONValue] = ["user": .string(annID), "uid": .int(Int64(OtherUser.nobody))]
            #expect(try await Self.refusal(peer, "open_session", named) == "permission_denied")
            _ = try await root.result("open_session", named)
            #expect(try await Self.refusal(peer, "set_pin", ["user_id": .string(annID), "pin": "4711"]) == nil)
            let other = try await Self.connect(daemon, uid: Self.seatUID)
            #expect(
                try await Self.refusal(other, "set_pin", ["user_id": .string(annID), "pin": "4712"])
                    == "permission_denied"
            )
        }
    }
}
