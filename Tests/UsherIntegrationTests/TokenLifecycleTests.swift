import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The token lifecycle on the real daemon, with lifetimes of seconds so that it plays out within a test.
@Suite(.timeLimit(.minutes(2)))
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

    @Test func minValidForcesARefreshAndConcurrentCallsShareIt() async throws {
        try await DaemonProcess.with(config: Self.shortLived(access: "20s", refresh: "60s", margin: "1s")) { daemon in
            let client = try daemon.connect()
            // A token issued within the last second satisfies any min_valid: no refresh loop. The three requests go
            // out in one write, so they reach the daemon well within that second however loaded the machine is.
            try client.send(
                [
                    #"{"id":1,"method":"login","params":{"credentials":{"type":"anonymous"}}}"#,
                    #"{"id":2,"method":"access_token"}"#,
                    #"{"id":3,"method":"access_token","params":{"min_valid":3600}}"#,
                    #"{"id":4,"method":"status"}"#,
                ].joined(separator: "\n")
            )
            _ = try await client.readObject()
            let first = try #require(try await client.readObject()["result"])
            #expect(try await client.readObject()["result"]?["access_token"] == first["access_token"])
            #expect(try await client.readObject()["result"]?["refresh"]?["succeeded"] == 0)

            try await Task.sleep(for: .milliseconds(1500))
            // 200 connections ask at once for a token valid for an hour (more than any token can give): one refresh.
            let connections = try (0..<200).map { _ in try daemon.connect() }
            for connection in connections {
                try connection.send(#"{"id":1,"method":"access_token","params":{"min_valid":3600}}"#)
            }
            var tokens = Set<String>()
            for connection in connections {
                let response = try await connection.readObject()
                let token = try #require(response["result"]?["access_token"]?.stringValue)
                tokens.insert(token)
                #expect((18...20).contains(response["result"]?["expires_in"]?.intValue ?? 0))
            }
            #expect(tokens.count == 1)
            #expect(!tokens.contains(try #require(first["access_token"]?.stringValue)))
            #expect(try await client.result("status")["refresh"]?["succeeded"] == 1)

            // An explicit refresh always goes to the provider.
            let refreshed = try await client.result("refresh")
            #expect(refreshed["access_token_expires_at"] != nil)
            #expect(try await client.result("status")["refresh"]?["succeeded"] == 2)
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
            watcher.timeout = .seconds(10)
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
            refresh_token_lifetime = "60s"
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
            let generation = try #require(try await client.result("current_user")["generation"]?.intValue)
            client.close()

            // Down for longer than both the access tokens and the brief session last.
            try await daemon.stop()
            try await Task.sleep(for: .seconds(4))
            try await daemon.start()

            let after = try daemon.connect()
            let users = try #require(try await after.result("list_users")["users"]?.arrayValue)
            #expect(users.first { $0["id"]?.stringValue == brief }?["state"] == "logged_out")
            #expect(users.first { $0["id"]?.stringValue == kept }?["state"] == "logged_in")
            // The brief user's session ended while the daemon was down; the active user fell back.
            let current = try await after.result("current_user")
            #expect(current["user"]?["id"]?.stringValue == kept)
            #expect(current["generation"]?.intValue == generation + 1)
            // The kept user's expired access token is refreshed on demand.
            let token = try await after.result("access_token", ["user_id": .string(kept)])
            #expect((1...2).contains(token["expires_in"]?.intValue ?? 0))
        }
    }
}
