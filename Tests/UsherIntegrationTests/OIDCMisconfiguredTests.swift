import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

extension OIDCIntegrationTests {
    /// Replaces the daemon's configuration (the same file) with a SIGHUP and waits until it says it reloaded.
    static func reload(_ daemon: DaemonProcess) async throws {
        let before = daemon.log.components(separatedBy: "configuration reloaded").count
        kill(daemon.pid, SIGHUP)
        let deadline = ContinuousClock.now + .seconds(60)
        while daemon.log.components(separatedBy: "configuration reloaded").count == before {
            try #require(ContinuousClock.now < deadline, "usherd did not reload: \(daemon.log)")
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The log records of the daemon at error level that say a refresh was refused for the client configuration.
    static func refusedClientRecords(_ daemon: DaemonProcess) -> [Substring] {
        daemon.log.split(separator: "\n").filter {
            $0.range(of: #"\berror\s+token refresh refused"#, options: .regularExpression) != nil
        }
    }

    /// A rotated client secret: the server answers the refresh with invalid_client. The user stays logged in, the
    /// provider is not asked again for an hour, subscribers and the error log are told; a reload with the right
    /// secret retries at once.
    @Test func aRotatedClientSecretKeepsTheUserLoggedInUntilAReloadFixesIt() async throws {
        let server = try Self.server()
        let secrets = try TestDirectory()
        defer { secrets.remove() }
        for (name, secret) in ["password": "password-secret", "short": "short-secret", "service": "service-secret"] {
            try secrets.write("\(name).secret", secret + "\n")
        }
        try await DaemonProcess.with(config: server.providers(secretDirectory: secrets.path)) { daemon in
            let watcher = try daemon.connect()
            watcher.timeout = .seconds(60)
            _ = try await watcher.result("subscribe", ["events": ["token_refreshed", "refresh_failed"]])
            let client = try daemon.connect()
            client.timeout = .seconds(60)
            let login = try await client.result("login", OIDCProviderOutageTests.password("ivan"))
            let ivan = try #require(login["user"]?["id"]?.stringValue)
            let firstToken = try await client.result("access_token", ["user_id": .string(ivan)])["access_token"]

            // The secret is rotated at the provider, and the daemon still has the old one.
            try secrets.write("password.secret", "rotated-elsewhere\n")
            try await Self.reload(daemon)
            #expect(try await client.errorCode("refresh", ["user_id": .string(ivan)]) == "provider_misconfigured")
            let event = try await watcher.nextEvent()
            #expect(event["event"] == "refresh_failed")
            #expect(event["data"]?["user_id"]?.stringValue == ivan)
            #expect(event["data"]?["code"] == "provider_misconfigured")
            let retryAt = try #require(event["data"]?["retry_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)))
            #expect(retryAt > Timestamp.now().adding(milliseconds: 50 * 60_000), "\(retryAt)")
            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            let refused = try #require(users.first { $0["id"]?.stringValue == ivan })
            #expect(refused["state"] == "logged_in")
            #expect(refused["token_state"] == "retrying")
            #expect(refused["last_refresh_error"] == "provider_misconfigured")
            #expect(refused["retry_at"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) == retryAt)
            #expect(Self.refusedClientRecords(daemon).count == 1, "\(daemon.log)")
            #expect(Self.refusedClientRecords(daemon).first?.contains(ivan) == true)

            // Within the hour the provider is left alone (no second refusal is logged), and the stored token is
            // still handed out.
            #expect(try await client.errorCode("refresh", ["user_id": .string(ivan)]) == "provider_misconfigured")
            #expect(try await client.result("access_token", ["user_id": .string(ivan)])["access_token"] == firstToken)
            #expect(Self.refusedClientRecords(daemon).count == 1)

            // The operator puts the new secret in place and reloads: the refresh is retried at once, by itself.
            try secrets.write("password.secret", "password-secret\n")
            try await Self.reload(daemon)
            while true {
                let next = try await watcher.nextEvent()
                #expect(next["event"] != "refresh_failed", "\(next)")
                if next["event"] == "token_refreshed", next["data"]?["user_id"]?.stringValue == ivan { break }
            }
            let after = try #require(try await client.result("list_users")["users"]?.arrayValue)
            let fresh = try #require(after.first { $0["id"]?.stringValue == ivan })
            #expect(fresh["token_state"] == "fresh")
            #expect(fresh["last_refresh_error"] == .null)
            #expect(try await client.result("access_token", ["user_id": .string(ivan)])["access_token"] != firstToken)
        }
    }
}
