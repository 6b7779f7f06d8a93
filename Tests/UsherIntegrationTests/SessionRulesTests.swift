import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The user-model rules end to end: the real daemon, a real socket, NDJSON as a client writes it.
@Suite(.integrationHangGuard)
struct SessionRulesTests {
    static func emailLogin(_ email: String, _ password: String = "secret123") -> [String: JSONValue] {
        ["credentials": ["type": "email_password", "email": .string(email), "password": .string(password)]]
    }

    static func register(_ connection: LineConnection, _ emails: String...) async throws {
        for email in emails {
            _ = try await connection.result("register", ["email": .string(email), "password": "secret123"])
        }
    }

    @Test func twoUsersLoginSwitchLogoutRemove() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "joe@example.com", "ann@example.com")

            #expect(try await client.result("current_user") == ["generation": 0, "locked": false, "user": nil])

            let joe = try await client.result("login", Self.emailLogin("joe@example.com"))
            #expect(joe["generation"]?.intValue == 1)
            #expect(joe["user"]?["state"] == "logged_in")
            #expect(joe["user"]?["active"] == true)
            #expect(joe["user"]?["email"] == "joe@example.com")
            let joeID = try #require(joe["user"]?["id"]?.stringValue)

            let ann = try await client.result("login", Self.emailLogin("ANN@example.com"))
            let annID = try #require(ann["user"]?["id"]?.stringValue)
            #expect(ann["generation"]?.intValue == 2)
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == annID)

            // Both listed, oldest first; only Ann active.
            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            #expect(users.map { $0["id"]?.stringValue } == [joeID, annID])
            #expect(users.map { $0["active"]?.boolValue } == [false, true])

            // Switch to Joe, then a switch to the already active user changes nothing.
            #expect(try await client.result("switch_user", ["user_id": .string(joeID)])["generation"]?.intValue == 3)
            #expect(try await client.result("switch_user", ["user_id": .string(joeID)])["generation"]?.intValue == 3)

            // Logging out Joe (the active one) hands over to Ann, in one generation.
            let logout = try await client.result("logout")
            #expect(logout["generation"]?.intValue == 4)
            #expect(logout["user"]?["state"] == "logged_out")
            #expect(logout["user"]?["email"] == "joe@example.com")
            #expect(logout["user"]?["access_token_expires_at"] == .null)
            #expect(logout["revoked"] == true)
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == annID)

            // Logging out a logged-out user succeeds and changes nothing.
            #expect(try await client.result("logout", ["user_id": .string(joeID)])["generation"]?.intValue == 4)
            // Switching to a logged-out user fails and leaves the active user alone.
            #expect(try await client.errorCode("switch_user", ["user_id": .string(joeID)]) == "user_logged_out")
            #expect(try await client.errorCode("switch_user", ["user_id": "u_nobody"]) == "user_not_found")
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == annID)

            // Joe logs in again: same id, active again.
            let again = try await client.result("login", Self.emailLogin("joe@example.com"))
            #expect(again["user"]?["id"]?.stringValue == joeID)
            #expect(again["user"]?["active"] == true)

            // Removing Joe deletes him; Ann takes over.
            let removed = try await client.result("remove_user", ["user_id": .string(joeID)])
            #expect(removed["user_id"]?.stringValue == joeID)
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == annID)
            #expect(try await client.result("list_users")["users"]?.arrayValue?.count == 1)

            // Remove Ann too: nobody is left, and there is no active user.
            _ = try await client.result("remove_user", ["user_id": .string(annID)])
            #expect(try await client.result("current_user")["user"] == .null)
            #expect(try await client.errorCode("access_token") == "no_active_user")
            #expect(try await client.errorCode("logout") == "no_active_user")
        }
    }

    @Test func mostRecentlyActiveUserTakesOverAndAnonymousIsReused() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "a@example.com", "b@example.com", "c@example.com")
            let a = try #require(
                try await client.result("login", Self.emailLogin("a@example.com"))["user"]?["id"]?.stringValue
            )
            let b = try #require(
                try await client.result("login", Self.emailLogin("b@example.com"))["user"]?["id"]?.stringValue
            )
            let c = try #require(
                try await client.result("login", Self.emailLogin("c@example.com"))["user"]?["id"]?.stringValue
            )
            _ = try await client.result("switch_user", ["user_id": .string(a)])
            _ = try await client.result("switch_user", ["user_id": .string(b)])
            // Recency now: B (active), A, C. Logging out the inactive C changes nothing about the active user.
            let generation = try #require(
                try await client.result("logout", ["user_id": .string(c)])["generation"]?.intValue
            )
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == b)
            // Logging out B hands over to A, the most recently active — not C (logged out) and not by creation order.
            #expect(try await client.result("logout")["generation"]?.intValue == generation + 1)
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == a)

            // Anonymous login twice: the same anonymous user, reused.
            let anonymous = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let anonymousID = try #require(anonymous["user"]?["id"]?.stringValue)
            #expect(anonymous["user"]?["kind"] == "anonymous")
            _ = try await client.result("switch_user", ["user_id": .string(a)])
            let reused = try await client.result("login", ["credentials": ["type": "anonymous"]])
            #expect(reused["user"]?["id"]?.stringValue == anonymousID)
            #expect(reused["user"]?["active"] == true)
            // Logging out an anonymous user removes it.
            let gone = try await client.result("logout")
            #expect(gone["user"]?["state"] == "removed")
            let ids = try #require(try await client.result("list_users")["users"]?.arrayValue).compactMap {
                $0["id"]?.stringValue
            }
            #expect(!ids.contains(anonymousID))
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == a)
        }
    }

    @Test func ifGenerationGuardsSwitches() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "a@example.com", "b@example.com")
            let a = try #require(
                try await client.result("login", Self.emailLogin("a@example.com"))["user"]?["id"]?.stringValue
            )
            let second = try await client.result("login", Self.emailLogin("b@example.com"))
            let generation = try #require(second["generation"]?.intValue)
            #expect(
                try await client.errorCode(
                    "switch_user",
                    ["user_id": .string(a), "if_generation": .int(generation - 1)]
                )
                    == "conflict"
            )
            #expect(try await client.result("current_user")["generation"]?.intValue == generation)
            let switched = try await client.result(
                "switch_user",
                ["user_id": .string(a), "if_generation": .int(generation)]
            )
            #expect(switched["generation"]?.intValue == generation + 1)
        }
    }

    @Test func registrationAndCredentialErrors() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "joe@example.com")
            #expect(
                try await client.errorCode("register", ["email": "JOE@example.com", "password": "secret123"])
                    == "account_exists"
            )
            #expect(
                try await client.errorCode("register", ["email": "x@example.com", "password": "short"])
                    == "invalid_params"
            )
            #expect(
                try await client.errorCode("register", ["email": "not-an-email", "password": "secret123"])
                    == "invalid_params"
            )
            #expect(
                try await client.errorCode("login", Self.emailLogin("joe@example.com", "wrong-password"))
                    == "invalid_credentials"
            )
            #expect(try await client.errorCode("login", Self.emailLogin("nobody@example.com")) == "invalid_credentials")
            #expect(
                try await client.errorCode("login", ["credentials": ["type": "magic"]]) == "unsupported_credentials"
            )
            #expect(
                try await client.errorCode("login", ["provider": "nope", "credentials": ["type": "anonymous"]])
                    == "provider_not_found"
            )
            #expect(try await client.errorCode("login", [:]) == "invalid_params")
            // Nothing of the failed attempts changed the state.
            #expect(try await client.result("current_user") == ["generation": 0, "locked": false, "user": nil])
        }
    }

    @Test func registrationAndAnonymousCanBeTurnedOff() async throws {
        try await DaemonProcess.with(
            config: """
                [providers.local]
                type = "local"
                allow_registration = false
                allow_anonymous = false
                """
        ) { daemon in
            let client = try daemon.connect()
            #expect(
                try await client.errorCode("register", ["email": "a@example.com", "password": "secret123"])
                    == "registration_disabled"
            )
            #expect(
                try await client.errorCode("login", ["credentials": ["type": "anonymous"]]) == "unsupported_credentials"
            )
            let providers = try #require(try await client.result("providers")["providers"]?.arrayValue)
            #expect(providers.first?["credentials"] == ["email_password", "api_key"])
        }
    }

    @Test func apiKeysLogInAsTheirAccount() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "joe@example.com")
            let joe = try #require(
                try await client.result("login", Self.emailLogin("joe@example.com"))["user"]?["id"]?.stringValue
            )
            let created = try await client.result("create_api_key", ["name": "ci"])
            let key = try #require(created["key"]?.stringValue)
            #expect(created["name"] == "ci")
            #expect(try await client.errorCode("create_api_key", ["name": "ci"]) == "invalid_params")
            #expect(
                try await client.result("list_api_keys")["api_keys"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
                    == [
                        "ci"
                    ]
            )
            // The listing never shows the key itself.
            #expect(!String(describing: try await client.result("list_api_keys")).contains(key))

            _ = try await client.result("logout")
            let viaKey = try await client.result("login", ["credentials": ["type": "api_key", "key": .string(key)]])
            #expect(viaKey["user"]?["id"]?.stringValue == joe)
            #expect(viaKey["user"]?["kind"] == "api_key")

            _ = try await client.result("delete_api_key", ["name": "ci"])
            #expect(try await client.errorCode("delete_api_key", ["name": "ci"]) == "api_key_not_found")
            _ = try await client.result("logout")
            #expect(
                try await client.errorCode("login", ["credentials": ["type": "api_key", "key": .string(key)]])
                    == "invalid_credentials"
            )
            // Anonymous users have no API keys.
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            #expect(try await client.errorCode("create_api_key", ["name": "x"]) == "unsupported_credentials")
        }
    }
}
