import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The token lifecycle on the real daemon, with lifetimes of seconds so that it plays out within a test.
@Suite(.integrationHangGuard)
struct TokenLifecycleTests {
    static func shortLived(access: String, refresh: String, margin: String = "5m") -> String {
        """
        [tokens]
        refresh_margin = "\(margin)"
        [providers.local]
        type = "local"
        access_token_lifetime = "\(access)"
        refresh_token_lifetime = "\(refresh)"
        """
    }

    @Test func tokensAreRefreshedBeforeExpiryWithoutAnyRequest() async throws {
        try await DaemonProcess.with(config: Self.shortLived(access: "3s", refresh: "60s")) { daemon in
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["token_refreshed"]])
            let client = try daemon.connect()
            let login = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let userID = try #require(login["user"]?["id"]?.stringValue)
            let firstExpiry = try #require(login["user"]?["access_token_expires_at"]?.stringValue)
            let nextRefresh = try #require(login["user"]?["next_refresh_at"]?.stringValue)
            #expect(login["user"]?["token_state"] == "fresh")
            // margin = min(5m, L/2) = 1.5 s, minus up to 10 % jitter: the refresh is planned 1.5–1.65 s early.
            let lead = try #require(Self.milliseconds(firstExpiry)) - (try #require(Self.milliseconds(nextRefresh)))
            #expect((1500...1650).contains(lead))

            let event = try await watcher.nextEvent()
            #expect(event["event"] == "token_refreshed")
            #expect(event["data"]?["user_id"]?.stringValue == userID)
            // The token itself is never in an event.
            #expect(event["data"]?["access_token"] == nil)
            let secondExpiry = try #require(event["data"]?["access_token_expires_at"]?.stringValue)
            #expect(try #require(Self.milliseconds(secondExpiry)) > (try #require(Self.milliseconds(firstExpiry))))
            // A refresh changes no generation.
            #expect(event["generation"] == login["generation"])

            // And again: the user stays fresh for as long as the session lasts.
            _ = try await watcher.nextEvent()
            let status = try await client.result("status")
            #expect((status["refresh"]?["succeeded"]?.intValue ?? 0) >= 2)
            #expect(status["refresh"]?["failed"] == 0)
            #expect(status["refresh"]?["scheduled"] == 1)
            #expect(try await client.result("access_token")["expires_in"]?.intValue ?? 0 >= 1)
        }
    }

    static func milliseconds(_ rfc3339: String) -> Int64? {
        Timestamp(rfc3339: rfc3339)?.millisecondsSinceEpoch
    }

    /// `min_valid` larger than any token can give, on the real daemon. Which requests find the token "fresh" (issued
    /// within the last second) depends on how fast the machine answers, so this test asserts only what holds at any
    /// speed: a request never loops, every answer carries a token good for most of its lifetime, the old token is never
    /// handed out once too old, and each refresh's token reached whoever asked. That concurrent callers share one
    /// refresh is proven exactly, with a held provider and the test clock, by the unit test "concurrent access_token
    /// calls share one refresh".
    @Test func minValidForcesARefreshAndConcurrentCallsShareIt() async throws {
        // 60 s tokens refreshed 1 s before expiry: the scheduler stays out of the way for the whole test.
        try await DaemonProcess.with(config: Self.shortLived(access: "60s", refresh: "300s", margin: "1s")) { daemon in
            let client = try daemon.connect()
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            func refreshes() async throws -> Int64 {
                try #require(try await client.result("status")["refresh"]?["succeeded"]?.intValue)
            }
            let first = try await client.result("access_token", ["min_valid": 3600])
            #expect(try await refreshes() <= 1)
            #expect((30...60).contains(first["expires_in"]?.intValue ?? 0))
            let firstToken = try #require(first["access_token"]?.stringValue)

            // Older than a second: no request may be answered with it any more.
            try await Task.sleep(for: .milliseconds(1500))
            let before = try await refreshes()
            let connections = try (0..<200).map { _ in try daemon.connect() }
            for connection in connections {
                try connection.send(#"{"id":1,"method":"access_token","params":{"min_valid":3600}}"#)
            }
            var tokens = Set<String>()
            for connection in connections {
                let response = try await connection.readObject()
                let token = try #require(response["result"]?["access_token"]?.stringValue)
                tokens.insert(token)
                #expect((30...60).contains(response["result"]?["expires_in"]?.intValue ?? 0))
            }
            let made = try await refreshes() - before
            #expect(!tokens.contains(firstToken))
            #expect(made >= 1)
            #expect(Int64(tokens.count) == made)
            #expect(made < Int64(connections.count))

            // An explicit refresh goes to the provider, unless the last refresh is less than a second old: then it is
            // answered with that refresh's token (which of the two depends on the machine's speed; the unit tests
            // "Forced refreshes" pin the rule with a test clock). Either way, at most one more provider call.
            let refreshed = try await client.result("refresh")
            #expect(refreshed["access_token_expires_at"] != nil)
            #expect((before + made...before + made + 1).contains(try await refreshes()))
        }
    }

    @Test func refreshTokenExpiryLogsTheUserOutAndMovesTheActiveUser() async throws {
        let config = """
            [providers.long]
            type = "local"
            refresh_token_lifetime = "60s"
            [providers.short]
            type = "local"
            access_token_lifetime = "2s"
            refresh_token_lifetime = "3s"
            [daemon]
            default_provider = "long"
            """
        try await DaemonProcess.with(config: config) { daemon in
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["user_logged_out", "active_user_changed"]])
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "long@example.com", "password": "secret123"])
            _ = try await client.result(
                "register",
                ["provider": "short", "email": "short@example.com", "password": "secret123"]
            )
            let longID = try #require(
                try await client.result("login", SessionRulesTests.emailLogin("long@example.com"))["user"]?["id"]?
                    .stringValue
            )
            var shortLogin = SessionRulesTests.emailLogin("short@example.com")
            shortLogin["provider"] = "short"
            let shortID = try #require(try await client.result("login", shortLogin)["user"]?["id"]?.stringValue)
            #expect(try await watcher.nextEvent()["data"]?["user_id"]?.stringValue == longID)
            #expect(try await watcher.nextEvent()["data"]?["user_id"]?.stringValue == shortID)

            // Three seconds after login the short session ends by itself, without any request.
            watcher.timeout = hangGuard
            let loggedOut = try await watcher.nextEvent()
            #expect(loggedOut["event"] == "user_logged_out")
            #expect(loggedOut["data"] == ["user_id": .string(shortID), "reason": "refresh_token_expired"])
            let handedOver = try await watcher.nextEvent()
            #expect(handedOver["event"] == "active_user_changed")
            #expect(handedOver["data"] == ["previous_user_id": .string(shortID), "user_id": .string(longID)])
            #expect(handedOver["generation"] == loggedOut["generation"])

            #expect(try await client.errorCode("access_token", ["user_id": .string(shortID)]) == "user_logged_out")
            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            let short = try #require(users.first { $0["id"]?.stringValue == shortID })
            #expect(short["state"] == "logged_out")
            #expect(short["token_state"] == "none")
            #expect(short["email"] == "short@example.com")
        }
    }

    @Test func aRestartInTheMiddleOfTheLifecycle() async throws {
        let config = """
            [providers.local]
            type = "local"
            access_token_lifetime = "2s"
            # Longer than the test can take on a busy machine: the kept user's session must outlive it.
            refresh_token_lifetime = "1h"
            [providers.brief]
            type = "local"
            access_token_lifetime = "2s"
            refresh_token_lifetime = "3s"
            """
        try await DaemonProcess.with(config: config) { daemon in
            let client = try daemon.connect()
            let kept = try #require(
                try await client.result("login", ["credentials": ["type": "anonymous"]])["user"]?["id"]?.stringValue
            )
            _ = try await client.result(
                "register",
                ["provider": "brief", "email": "b@example.com", "password": "secret123"]
            )
            var briefLogin = SessionRulesTests.emailLogin("b@example.com")
            briefLogin["provider"] = "brief"
            let brief = try #require(try await client.result("login", briefLogin)["user"]?["id"]?.stringValue)
            let oldToken = try await client.result("access_token", ["user_id": .string(kept)])
            // The brief session may already have ended if this machine is slow; read the generation together with
            // the users, so the test knows whether the brief user's logout is still to come.
            let beforeStop = try await client.result("list_users")
            let generation = try #require(beforeStop["generation"]?.intValue)
            let briefStillIn =
                beforeStop["users"]?.arrayValue?.first { $0["id"]?.stringValue == brief }?["state"] == "logged_in"
            client.close()

            // Down for longer than both the access tokens and the brief session last.
            try await daemon.stop()
            try await Task.sleep(for: .seconds(4))
            try await daemon.start()

            let after = try daemon.connect()
            let users = try #require(try await after.result("list_users")["users"]?.arrayValue)
            #expect(users.first { $0["id"]?.stringValue == brief }?["state"] == "logged_out")
            #expect(users.first { $0["id"]?.stringValue == kept }?["state"] == "logged_in")
            // The brief user's session ended (while the daemon was down, or just before); the active user fell back,
            // and that logout changed the generation exactly once.
            let current = try await after.result("current_user")
            #expect(current["user"]?["id"]?.stringValue == kept)
            #expect(current["generation"]?.intValue == generation + (briefStillIn ? 1 : 0))
            // The kept user's expired access token is replaced (by the overdue refresh after start, or on demand).
            let token = try await after.result("access_token", ["user_id": .string(kept)])
            #expect(token["access_token"] != oldToken["access_token"])
            let oldExpiry = try #require(oldToken["expires_at"]?.stringValue.flatMap(Self.milliseconds))
            #expect(try #require(token["expires_at"]?.stringValue.flatMap(Self.milliseconds)) > oldExpiry)
        }
    }
}
