import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// A secret the daemon deleted is gone from the disk once the deletion is acknowledged: from the database file
/// (`secure_delete`) and from its write-ahead log, where the frames of the commits that wrote it would otherwise keep
/// it until SQLite's next checkpoint (issue 36 item 16).
@Suite(.integrationHangGuard)
struct DeletedSecretsTests {
    /// The stored value of `column` for every user, read with the sqlite3 shell as an operator would.
    static func stored(_ column: String, _ daemon: DaemonProcess) async throws -> [String] {
        let output = try await runProcess(
            "/usr/bin/sqlite3",
            ["\(daemon.stateDirectory)/usher.sqlite", "SELECT \(column) FROM \"user\" WHERE \(column) IS NOT NULL"]
        )
        #expect(output.status == 0, "\(output.stderr)")
        return output.stdout.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }

    static func file(_ name: String, _ daemon: DaemonProcess) -> [UInt8] {
        FileManager.default.contents(atPath: "\(daemon.stateDirectory)/\(name)").map { Array($0) } ?? []
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let needle = Array(needle.utf8)
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    @Test func aLoggedOutSessionsTokensAndDPoPKeyAreGoneFromTheWriteAheadLog() async throws {
        try await DaemonProcess.with(config: DPoPTests.config) { daemon in
            let client = try daemon.connect()
            _ = try await DPoPTests.logIn(client, "ann@example.com")
            let token = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            let keys = try await Self.stored("dpop_key", daemon)
            let refreshTokens = try await Self.stored("refresh_token", daemon)
            #expect(keys.count == 1 && refreshTokens.count == 1, "a DPoP-bound session: \(keys) \(refreshTokens)")
            let secrets =
                [("the access token", token)] + keys.map { ("the DPoP key", $0) }
                + refreshTokens.map { ("the refresh token", $0) }
            // The control: right after the login, the log holds the secrets.
            let before = Self.file("usher.sqlite-wal", daemon) + Self.file("usher.sqlite", daemon)
            for (what, secret) in secrets { #expect(Self.contains(before, secret), "\(what) before the logout") }

            // The logout deletes them; once it is acknowledged, neither file holds one.
            let logout = try await client.result("logout")
            #expect(logout["user"]?["state"] == "logged_out")
            #expect(try await Self.stored("dpop_key", daemon).isEmpty)
            for name in ["usher.sqlite-wal", "usher.sqlite"] {
                let bytes = Self.file(name, daemon)
                for (what, secret) in secrets {
                    #expect(!Self.contains(bytes, secret), "\(what) is still in \(name) after the logout")
                }
            }
        }
    }

    @Test func aDeletedUsersSecretsAreGoneFromTheWriteAheadLog() async throws {
        try await DaemonProcess.with(config: DPoPTests.config) { daemon in
            let client = try daemon.connect()
            let user = try await DPoPTests.logIn(client, "bea@example.com")
            let token = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            let keys = try await Self.stored("dpop_key", daemon)
            #expect(keys.count == 1)
            _ = try await client.result("delete_user", ["user_id": .string(user)])
            for name in ["usher.sqlite-wal", "usher.sqlite"] {
                let bytes = Self.file(name, daemon)
                #expect(!Self.contains(bytes, token), "the access token is still in \(name)")
                for key in keys { #expect(!Self.contains(bytes, key), "the DPoP key is still in \(name)") }
            }
        }
    }
}
