import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// A provider that is not there: at start, and in the middle of a session. Each test has a server of its own.
@Suite(.integrationHangGuard)
struct OIDCProviderOutageTests {
    static func password(_ user: String, provider: String = "corp") -> [String: JSONValue] {
        [
            "provider": .string(provider),
            "credentials": ["type": "password", "username": .string(user), "password": .string("\(user)-password")],
        ]
    }

    @Test func theDaemonStartsWithoutTheProviderAndDiscoversItInTheBackground() async throws {
        let server = try await OIDCTestServer()
        defer { server.directory.remove() }
        // Learn a free port, then leave it unserved.
        try await server.start()
        await server.stop()
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let client = try daemon.connect()
            // Everything else works at once.
            #expect(try await client.result("hello")["server"] == "usherd")
            #expect(try await client.result("list_users")["users"]?.arrayValue?.isEmpty == true)
            #expect(try await client.errorCode("login", Self.password("heidi")) == "provider_unavailable")
            #expect(try await client.errorCode("login_begin", ["provider": "code"]) == "provider_unavailable")
            #expect(daemon.log.contains("discovery failed; retrying"))

            try await server.start(port: nil)
            // The background retry (1 s, 2 s, 4 s, ... apart) finds it without any request: the credential types
            // then come from discovery, which lists no token exchange.
            try await eventually {
                let providers = try await client.result("providers")["providers"]?.arrayValue ?? []
                let corp = providers.first { $0["name"] == "corp" }?["credentials"]?.arrayValue ?? []
                return !corp.contains("token_exchange")
            }
            #expect(daemon.log.contains("discovery done"))
            let login = try await client.result("login", Self.password("heidi"))
            #expect(login["user"]?["email"] == "heidi@example.com")
        }
        await server.stop()
    }

    @Test func aProviderThatGoesAwayKeepsUsersLoggedInAndTheyRecoverWhenItReturns() async throws {
        try await OIDCTestServer.with { server in
            try await DaemonProcess.with(config: server.providers()) { daemon in
                let watcher = try daemon.connect()
                watcher.timeout = hangGuard
                _ = try await watcher.result(
                    "subscribe",
                    ["events": ["token_refreshed", "refresh_failed", "user_logged_out"]]
                )
                let client = try daemon.connect()
                let other = try await client.result("login", Self.password("ivan", provider: "short"))
                let ivan = try #require(other["user"]?["id"]?.stringValue)
                let login = try await client.result("login", Self.password("grace", provider: "short"))
                let grace = try #require(login["user"]?["id"]?.stringValue)

                await server.stop()
                // Refreshes fail transiently: events, the users stay logged in, retrying.
                var failures: Set<String> = []
                while failures.count < 2 {
                    let event = try await watcher.nextEvent()
                    guard event["event"] == "refresh_failed" else { continue }
                    #expect(event["data"]?["code"] == "provider_unavailable")
                    #expect(event["data"]?["retry_at"]?.stringValue != nil)
                    failures.insert(event["data"]?["user_id"]?.stringValue ?? "")
                }
                #expect(failures == [ivan, grace])
                let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
                #expect(users.allSatisfy { $0["state"] == "logged_in" })
                #expect(users.contains { $0["token_state"] == "retrying" })
                // While the stored 4-second token is valid, access_token hands it out; once it has expired, it says
                // the provider is unavailable. (Waiting for that state, not for four seconds to pass.)
                // (min_valid 0 while waiting: the valid token is answered without asking the provider each time.)
                var expired: [String: JSONValue] = [:]
                try await eventually {
                    expired = try await client.call("access_token", ["user_id": .string(grace), "min_valid": 0])
                    return expired["result"] == nil
                }
                #expect(expired["error"]?["code"] == "provider_unavailable", "\(expired)")
                #expect(
                    try await client.errorCode("access_token", ["user_id": .string(grace)]) == "provider_unavailable"
                )
                // A logout while the provider is down still logs the user out; the revocation is reported as failed.
                let logout = try await client.result("logout", ["user_id": .string(ivan)])
                #expect(logout["revoked"] == false)
                #expect(logout["user"]?["state"] == "logged_out")

                try await server.start(port: nil)
                // The next retry succeeds: the user is fresh again, and nobody was logged out by the outage.
                while true {
                    let event = try await watcher.nextEvent()
                    #expect(event["event"] != "user_logged_out" || event["data"]?["reason"] == "requested")
                    if event["event"] == "token_refreshed", event["data"]?["user_id"]?.stringValue == grace { break }
                }
                let token = try await client.result("access_token", ["user_id": .string(grace)])
                #expect((token["expires_in"]?.intValue ?? 0) >= 1)
                let after = try #require(try await client.result("list_users")["users"]?.arrayValue)
                #expect(after.first { $0["id"]?.stringValue == grace }?["state"] == "logged_in")
            }
        }
    }
}
