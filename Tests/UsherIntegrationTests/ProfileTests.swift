import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Profiles of local email/password accounts on the real daemon: `update_profile` sets them, the account keeps them
/// for later logins, they survive a restart, `refresh_profile` reads them again, and subscribers hear `user_changed`.
@Suite(.integrationHangGuard)
struct ProfileTests {
    @Test func updateProfileIsKeptWithTheAccountAndAnnounced() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let subscriber = try daemon.connect()
            _ = try await subscriber.result("subscribe", ["events": ["user_changed"]])
            _ = try await client.result("register", ["email": "ann@example.com", "password": "first secret"])
            let login = try await client.result(
                "login",
                ["credentials": ["type": "email_password", "email": "ann@example.com", "password": "first secret"]]
            )
            // A new account's profile is its email; no custom data.
            #expect(login["user"]?["profile"] == ["email": "ann@example.com"])
            #expect(login["user"]?["custom_data"] == [:])
            let id = try #require(login["user"]?["id"]?.stringValue)

            let updated = try await client.result(
                "update_profile",
                ["name": "Ann Example", "picture": "https://example.com/ann.png", "locale": "en-GB"]
            )
            #expect(updated["user"]?["id"]?.stringValue == id)
            #expect(
                updated["user"]?["profile"]
                    == [
                        "email": "ann@example.com", "name": "Ann Example", "picture": "https://example.com/ann.png",
                        "locale": "en-GB",
                    ]
            )
            #expect(updated["user"]?["name"] == "Ann Example")
            let event = try await subscriber.nextEvent()
            #expect(event["event"] == "user_changed")
            #expect(event["data"]?["user"]?["profile"]?["locale"] == "en-GB")
            #expect(event["generation"] == updated["generation"])

            // Reads show it, from the published state.
            #expect(try await client.result("current_user")["user"]?["profile"]?["name"] == "Ann Example")
            let listed = try await client.result("list_users")["users"]?.arrayValue?.first
            #expect(listed?["profile"]?["picture"] == "https://example.com/ann.png")

            // null removes a claim; absent ones stay.
            let removed = try await client.result("update_profile", ["picture": nil])
            #expect(removed["user"]?["profile"]?["picture"] == nil)
            #expect(removed["user"]?["profile"]?["locale"] == "en-GB")
            #expect(try await subscriber.nextEvent()["event"] == "user_changed")

            // The account keeps it: logged out and in again, the user has it from the account.
            _ = try await client.result("logout")
            let again = try await client.result(
                "login",
                ["credentials": ["type": "email_password", "email": "ann@example.com", "password": "first secret"]]
            )
            #expect(again["user"]?["profile"]?["name"] == "Ann Example")
            #expect(again["user"]?["profile"]?["locale"] == "en-GB")

            // refresh_profile reads the account again; nothing changed, so the generation stays.
            let refreshed = try await client.result("refresh_profile")
            #expect(refreshed["user"]?["profile"]?["name"] == "Ann Example")
            #expect(refreshed["generation"] == again["generation"])

            // Durable: a restart loads it.
            try await daemon.restart()
            let reconnected = try daemon.connect()
            let user = try await reconnected.result("current_user")["user"]
            #expect(user?["profile"]?["name"] == "Ann Example")
            #expect(user?["profile"]?["locale"] == "en-GB")
            #expect(user?["name"] == "Ann Example")
        }
    }

    @Test func badProfileValuesAreRefusedAndOnlyLocalAccountsHaveOne() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "bea@example.com", "password": "first secret"])
            _ = try await client.result(
                "login",
                ["credentials": ["type": "email_password", "email": "bea@example.com", "password": "first secret"]]
            )
            for params: [String: JSONValue] in [
                ["picture": "http://example.com/bea.png"], ["picture": "not a url"], ["locale": "english please"],
                ["locale": "e"], ["name": "Bea\nInjected: line"], ["name": .string(String(repeating: "b", count: 300))],
                ["name": 42], [:], ["email": "other@example.com"],
                // Issue 36: markup inside an https URL, another scheme, a name of characters that show nothing.
                ["picture": #"https://example.com/"><script>alert(1)</script>"#], ["picture": "javascript:alert(1)"],
                ["name": "\u{200B}\u{200C}\u{200D}\u{2060}"],
            ] {
                #expect(try await client.errorCode("update_profile", params) == "invalid_params", "\(params)")
            }
            // Nothing was changed by the refused requests.
            #expect(try await client.result("current_user")["user"]?["profile"] == ["email": "bea@example.com"])
            // An anonymous user has no account to keep a profile.
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            #expect(try await client.errorCode("update_profile", ["name": "Guest"]) == "unsupported_credentials")
            // A user the device does not have.
            #expect(try await client.errorCode("refresh_profile", ["user_id": "u_nobody"]) == "user_not_found")
            // A logged-out user has no session to read claims with.
            let bea = try #require(try await client.result("list_users")["users"]?.arrayValue?.first?["id"])
            _ = try await client.result("logout", ["user_id": bea])
            #expect(try await client.errorCode("refresh_profile", ["user_id": bea]) == "user_logged_out")
            #expect(try await client.errorCode("update_profile", ["user_id": bea, "name": "B"]) == "user_logged_out")
        }
    }

    @Test func theCLIShowsAndSetsAProfile() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "cy@example.com", "password": "first secret"])
            _ = try await client.result(
                "login",
                ["credentials": ["type": "email_password", "email": "cy@example.com", "password": "first secret"]]
            )
            let set = try await CLITests.usher(daemon, ["profile", "--name", "Cy Example", "--locale", "fr-CA"])
            #expect(set.status == 0, "\(set.stderr)")
            #expect(set.stdout.contains("Cy Example"))
            #expect(set.stdout.contains("fr-CA"))
            let whoami = try await CLITests.usher(daemon, ["whoami"])
            #expect(whoami.stdout.contains("locale"))
            #expect(whoami.stdout.contains("fr-CA"))
            let json = try await CLITests.usher(daemon, ["users", "--json"])
            #expect(json.stdout.contains(#""profile":{"email":"cy@example.com","locale":"fr-CA","name":"Cy Example"}"#))
            let bad = try await CLITests.usher(daemon, ["profile", "--picture", "ftp://example.com/x"])
            #expect(bad.status != 0)
            #expect(bad.stderr.contains("invalid_params"))
            let cleared = try await CLITests.usher(daemon, ["profile", "--locale", ""])
            #expect(cleared.status == 0, "\(cleared.stderr)")
            #expect(!cleared.stdout.contains("fr-CA"))
        }
    }
}
