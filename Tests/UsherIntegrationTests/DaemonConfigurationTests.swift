import Crypto
import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// Configuration the real daemon reads at start: a bad one names its key and file; the password hash cost.
@Suite(.integrationHangGuard)
struct DaemonConfigurationTests {
    @Test func badConfigurationIsAStartupErrorNamingKeyAndFile() async throws {
        let usherd = try BuiltProducts.path(of: "usherd")
        let directory = try TestDirectory()
        defer { directory.remove() }
        let cases: [(String, String)] = [
            ("[daemon]\nsockett = \"/tmp/x\"\n", "daemon.sockett: unknown key"),
            ("[limits]\nmax_line_bytes = \"big\"\n", "limits.max_line_bytes: must be an integer"),
            (
                "[limits]\nmax_connections_per_uid = 0\n",
                "limits.max_connections_per_uid: must be between 1 and 1000000, not 0"
            ),
            ("[limits]\nreserved_connections = -1\n", "limits.reserved_connections: must be between 1 and 10000"),
            ("[limits]\nmax_json_members = 8\n", "limits.max_json_members: must be between 16 and 65536, not 8"),
            ("[limits]\nmax_json_member = 100\n", "limits.max_json_member: unknown key"),
            (
                "[providers.local]\ntype = \"local\"\naccess_token_lifetime = \"10 minutes\"\n",
                "providers.local.access_token_lifetime"
            ),
            ("[daemon]\ndefault_provider = \"corp\"\n", "daemon.default_provider"),
            ("[daemon]\npassword_hash_cost = 9\n", "daemon.password_hash_cost: must be between 10 and 20"),
            ("[providers.x]\ntype = \"ldap\"\n", "providers.x.type"),
            ("this is not toml", "not valid TOML"),
        ]
        for (index, (text, expected)) in cases.enumerated() {
            let path = directory.file("bad\(index).toml")
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let output = try await runProcess(
                usherd,
                [
                    "--config", path, "--socket", directory.file("s\(index).sock"), "--state-directory",
                    directory.file("state"),
                ]
            )
            #expect(output.status != 0)
            #expect(output.stderr.contains(path), "\(output.stderr)")
            #expect(output.stderr.contains(expected), "\(output.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.file("s\(index).sock")))
        }
    }

    @Test func passwordHashCostSetsTheCostOfNewHashes() async throws {
        try await DaemonProcess.with(config: "[daemon]\npassword_hash_cost = 11\n") { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "cost@example.com", "password": "secret123"])
            let database = try AppDatabase(path: "\(daemon.stateDirectory)/usher.sqlite")
            let account = try #require(try await database.localAccount(provider: "local", email: "cost@example.com"))
            #expect(account.passwordHash.hasPrefix("$scrypt$ln=11,r=8,p=1$"))
            _ = try await client.result("login", SessionRulesTests.emailLogin("cost@example.com"))
        }
    }
}
