import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `daemon.token_encryption_key`: session secrets are sealed before they reach the disk.
@Suite(.integrationHangGuard)
struct EncryptionAtRestTests {
    /// Every byte of the database and its write-ahead log.
    static func databaseBytes(_ daemon: DaemonProcess) -> String {
        ["usher.sqlite", "usher.sqlite-wal"].compactMap {
            FileManager.default.contents(atPath: "\(daemon.stateDirectory)/\($0)")
        }.map { String(decoding: $0, as: UTF8.self) }.joined()
    }

    static func loginAndToken(_ daemon: DaemonProcess) async throws -> String {
        let client = try daemon.connect()
        _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
        return try #require(try await client.result("access_token")["access_token"]?.stringValue)
    }

    @Test func withoutAKeyTokensAreStoredAsTheyAre() async throws {
        try await DaemonProcess.with { daemon in
            let token = try await Self.loginAndToken(daemon)
            try await daemon.stop()
            // The control for the test below: the scan does find a token stored in the clear.
            #expect(Self.databaseBytes(daemon).contains(token))
        }
    }

    @Test func tokensAreSealedAndAWrongOrMissingKeyIsAClearStartupError() async throws {
        let key = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let daemon = try DaemonProcess()
        let keyPath = daemon.directory.file("token.key")
        try daemon.directory.write("token.key", key + "\n")
        chmod(keyPath, 0o600)
        try daemon.directory.write("usherd.toml", "[daemon]\ntoken_encryption_key = \"\(keyPath)\"\n")
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let token = try await Self.loginAndToken(daemon)
            try await daemon.stop()
            let stored = Self.databaseBytes(daemon)
            #expect(!stored.contains(token))
            #expect(!stored.contains("eyJhbGciOi"), "no JWT is stored in the clear")
            #expect(stored.contains("enc1:"))

            // The same token comes back after a restart with the key.
            try await daemon.start()
            #expect(try await daemon.connect().result("access_token")["access_token"]?.stringValue == token)
            try await daemon.stop()

            let usherd = try BuiltProducts.path(of: "usherd")
            func start(with config: String) async throws -> ProcessOutput {
                try daemon.directory.write("other.toml", config)
                return try await runProcess(
                    usherd,
                    [
                        "--config", daemon.directory.file("other.toml"), "--socket", daemon.socketPath,
                        "--state-directory", daemon.stateDirectory,
                    ]
                )
            }
            // A different key.
            try daemon.directory.write("wrong.key", String(key.reversed()) + "\n")
            chmod(daemon.directory.file("wrong.key"), 0o600)
            var output = try await start(
                with: "[daemon]\ntoken_encryption_key = \"\(daemon.directory.file("wrong.key"))\"\n"
            )
            #expect(output.status != 0)
            #expect(output.stderr.contains("cannot be decrypted"), "\(output.stderr)")
            // No key at all.
            output = try await start(with: "")
            #expect(output.status != 0)
            #expect(output.stderr.contains("stored tokens are encrypted"), "\(output.stderr)")
            // A key others can read.
            chmod(keyPath, 0o644)
            output = try await start(with: "[daemon]\ntoken_encryption_key = \"\(keyPath)\"\n")
            #expect(output.status != 0)
            #expect(output.stderr.contains("readable by group or others"), "\(output.stderr)")
            #expect(!output.stderr.contains(key))
        }
    }
}
