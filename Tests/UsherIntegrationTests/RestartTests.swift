import Crypto
import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// What survives a restart of the real daemon, and the modes of the files it is kept in.
@Suite(.integrationHangGuard)
struct RestartTests {
    @Test func stateSurvivesARestart() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "a@example.com", "password": "secret123"])
            _ = try await client.result("register", ["email": "b@example.com", "password": "secret123"])
            let a = try #require(
                try await client.result("login", SessionRulesTests.emailLogin("a@example.com"))["user"]?["id"]?
                    .stringValue
            )
            _ = try await client.result("login", SessionRulesTests.emailLogin("b@example.com"))
            _ = try await client.result("switch_user", ["user_id": .string(a)])
            _ = try await client.result("logout", ["user_id": .string(a)])
            let before = try await client.result("list_users")
            let token = try await client.result("access_token")
            client.close()

            try await daemon.restart()
            let after = try daemon.connect()
            #expect(try await after.result("list_users") == before)
            #expect(try await after.result("current_user")["generation"] == before["generation"])
            // The same token is still handed out (nothing was refreshed or lost).
            #expect(try await after.result("access_token")["access_token"] == token["access_token"])
            // SIGTERM ends the daemon cleanly and removes its socket.
            #expect(try await daemon.stop() == 0)
            #expect(!FileManager.default.fileExists(atPath: daemon.socketPath))
        }
    }

    @Test func filesArePrivate() async throws {
        try await DaemonProcess.with { daemon in
            _ = try await daemon.connect().result("login", ["credentials": ["type": "anonymous"]])
            func mode(_ path: String) throws -> Int {
                let attributes = try FileManager.default.attributesOfItem(atPath: path)
                return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
            }
            #expect(try mode(daemon.stateDirectory) == 0o700)
            #expect(try mode("\(daemon.stateDirectory)/usher.sqlite") == 0o600)
            #expect(try mode("\(daemon.stateDirectory)/signing-key.pem") == 0o600)
            #expect(try mode(daemon.socketPath) == 0o600)
        }
    }
}
