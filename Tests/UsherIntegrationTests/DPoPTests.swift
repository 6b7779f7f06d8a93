import Crypto
import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Proof of possession (RFC 9449) with the local provider's DPoP-bound tokens, against a resource server that checks
/// proofs as RFC 9449 section 7 asks (Tests/Fixtures/token-servers/dpop_server.py), with the real `curl` and the CLI.
@Suite(.integrationHangGuard)
struct DPoPTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/token-servers/dpop_server.py").path

    static let config = """
        [providers.local]
        type = "local"
        dpop = true
        """

    /// The resource server, trusting a JWK set: the daemon's, or an OpenID provider's.
    struct ResourceServer {
        var directory: TestDirectory
        var process: BackgroundProcess
        var base: String

        init(_ daemon: DaemonProcess, nonce: Bool = false) async throws {
            let jwks = try await daemon.connect().result("jwks")
            try await self.init(jwks: String(decoding: try JSONEncoder().encode(jwks), as: UTF8.self), nonce: nonce)
        }

        init(jwks: String, nonce: Bool = false) async throws {
            self.directory = try TestDirectory()
            try self.directory.write("jwks.json", jwks)
            self.process = try BackgroundProcess(
                TestPython.executable,
                [DPoPTests.fixture, self.directory.file("jwks.json")] + (nonce ? ["--nonce"] : [])
            )
            let listening = try await self.process.stderrLine(within: .seconds(90)) { $0.hasPrefix("listening on ") }
            self.base = String(listening.dropFirst("listening on ".count))
        }

        /// The server's verdicts so far: "accepted SUB" or "refused: REASON", in order.
        var verdicts: [String] {
            self.process.stderr.split(separator: "\n").map(String.init).filter {
                $0.hasPrefix("accepted ") || $0.hasPrefix("refused: ")
            }
        }
    }

    /// A GET with `headers` through the real curl: the status and the response's headers and body.
    static func curl(_ url: String, _ headers: [String]) async throws -> (status: Int, response: String) {
        let output = try await runProcess(
            "/usr/bin/curl",
            ["--silent", "--show-error", "--include"] + headers.flatMap { ["-H", $0] } + [url]
        )
        #expect(output.status == 0, "\(output.stderr)")
        let statusLine = output.stdout.split(separator: "\r\n").first ?? ""
        let status = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1
        return (status, output.stdout)
    }

    static func decodePart(_ jwt: String, _ index: Int) throws -> JSONValue {
        var text = String(jwt.split(separator: ".")[index])
        text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return try JSONDecoder().decode(JSONValue.self, from: try #require(Data(base64Encoded: text)))
    }

    static func base64URL<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The RFC 7638 thumbprint of a proof's `jwk` header, computed here from the JWK's members.
    static func thumbprint(ofProof proof: String) throws -> String {
        let jwk = try #require(try decodePart(proof, 0)["jwk"])
        let x = try #require(jwk["x"]?.stringValue)
        let y = try #require(jwk["y"]?.stringValue)
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        return base64URL(SHA256.hash(data: Data(canonical.utf8)))
    }

    /// A proof for `url` that is right in every way except its key, which is not the session's.
    static func proofFromAnotherKey(url: String, accessToken: String) -> String {
        let key = P256.Signing.PrivateKey()
        let raw = [UInt8](key.publicKey.rawRepresentation)
        let header =
            #"{"alg":"ES256","jwk":{"crv":"P-256","kty":"EC","x":"\#(base64URL(raw[0..<32]))","#
            + #""y":"\#(base64URL(raw[32..<64]))"},"typ":"dpop+jwt"}"#
        let ath = base64URL(SHA256.hash(data: Data(accessToken.utf8)))
        let claims =
            #"{"ath":"\#(ath)","htm":"GET","htu":"\#(url)","iat":\#(Int(Date().timeIntervalSince1970)),"#
            + #""jti":"\#(UUID().uuidString)"}"#
        let input = base64URL(Data(header.utf8)) + "." + base64URL(Data(claims.utf8))
        let signature = try! key.signature(for: Data(input.utf8))
        return input + "." + base64URL(signature.rawRepresentation)
    }

    static func logIn(_ client: LineConnection, _ email: String, register: Bool = true) async throws -> String {
        if register { _ = try await client.result("register", ["email": .string(email), "password": "secret one"]) }
        let login = try await client.result(
            "login",
            ["credentials": ["type": "email_password", "email": .string(email), "password": "secret one"]]
        )
        return try #require(login["user"]?["id"]?.stringValue)
    }

    @Test func boundTokensWorkOnlyWithAFreshProofFromTheSessionKey() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let client = try daemon.connect()
            let ann = try await Self.logIn(client, "ann@example.com")
            let server = try await ResourceServer(daemon)
            defer { server.directory.remove() }
            let url = server.base + "/photos"

            let answer = try await client.result("access_token")
            #expect(answer["token_type"] == "DPoP")
            let token = try #require(answer["access_token"]?.stringValue)
            let jkt = try #require(try Self.decodePart(token, 1)["cnf"]?["jkt"]?.stringValue)

            // A proof from the daemon, for this URL (its query is not part of htu), names the token's key and works.
            let result = try await client.result("dpop_proof", ["htm": "GET", "htu": .string(url + "?size=2")])
            #expect(result["user_id"]?.stringValue == ann)
            let proof = try #require(result["proof"]?.stringValue)
            #expect(try Self.decodePart(proof, 0)["typ"] == "dpop+jwt")
            #expect(try Self.decodePart(proof, 1)["htu"]?.stringValue == url)
            #expect(try Self.thumbprint(ofProof: proof) == jkt)
            let accepted = try await Self.curl(url, ["Authorization: DPoP \(token)", "DPoP: \(proof)"])
            #expect(accepted.status == 200, "\(accepted.response)")
            #expect(accepted.response.hasSuffix("hello \(ann)\n"))

            // The same proof again (an old jti), the token without a proof, a proof from another key, and a proof for
            // another method are all refused.
            let replayed = try await Self.curl(url, ["Authorization: DPoP \(token)", "DPoP: \(proof)"])
            let bare = try await Self.curl(url, ["Authorization: DPoP \(token)"])
            let foreign = Self.proofFromAnotherKey(url: url, accessToken: token)
            let stolen = try await Self.curl(url, ["Authorization: DPoP \(token)", "DPoP: \(foreign)"])
            let post = try #require(
                try await client.result("dpop_proof", ["htm": "POST", "htu": .string(url)])["proof"]?.stringValue
            )
            let wrongMethod = try await Self.curl(url, ["Authorization: DPoP \(token)", "DPoP: \(post)"])
            #expect(
                [replayed.status, bare.status, stolen.status, wrongMethod.status] == [Int](repeating: 401, count: 4)
            )
            #expect(
                server.verdicts == [
                    "accepted \(ann)", "refused: jti replayed", "refused: not exactly one DPoP proof",
                    "refused: the proof's key is not the one the token is bound to",
                    "refused: htm is not the request's method",
                ]
            )

            // A refreshed token is bound to the same key, and a new proof names the new token.
            _ = try await client.result("refresh")
            let refreshed = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            #expect(refreshed != token)
            #expect(try Self.decodePart(refreshed, 1)["cnf"]?["jkt"]?.stringValue == jkt)
            let again = try #require(
                try await client.result("dpop_proof", ["htm": "GET", "htu": .string(url)])["proof"]?.stringValue
            )
            #expect(try await Self.curl(url, ["Authorization: DPoP \(refreshed)", "DPoP: \(again)"]).status == 200)
        }
    }

    @Test func theCLIPrintsHeadersForCurlAndPassesTheServersNonce() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let client = try daemon.connect()
            let ann = try await Self.logIn(client, "ann@example.com")
            let server = try await ResourceServer(daemon, nonce: true)
            defer { server.directory.remove() }
            let url = server.base + "/inbox"

            let type = try await CLITests.usher(daemon, ["token", "--type"])
            #expect(type.status == 0 && type.stdout == "DPoP\n", "\(type.stderr)")
            let authorization = try await CLITests.usher(daemon, ["token", "--header"])
            #expect(authorization.stdout.hasPrefix("Authorization: DPoP ey"), "\(authorization.stderr)")
            let header = try await CLITests.usher(daemon, ["dpop-proof", "--header", "--url", url])
            #expect(header.status == 0 && header.stdout.hasPrefix("DPoP: ey"), "\(header.stderr)")

            // The server wants a nonce: it refuses the first proof and names one, which the next proof carries.
            let first = try await Self.curl(
                url,
                [
                    authorization.stdout.trimmingCharacters(in: .newlines),
                    header.stdout.trimmingCharacters(in: .newlines),
                ]
            )
            #expect(first.status == 401)
            #expect(first.response.contains(#"error="use_dpop_nonce""#), "\(first.response)")
            let nonceLine = try #require(
                first.response.split(separator: "\r\n").first { $0.lowercased().hasPrefix("dpop-nonce: ") }
            )
            let nonce = String(nonceLine.dropFirst("dpop-nonce: ".count))
            let withNonce = try await CLITests.usher(
                daemon,
                ["dpop-proof", "--method", "GET", "--url", url, "--nonce", nonce]
            )
            #expect(withNonce.status == 0, "\(withNonce.stderr)")
            #expect(try Self.decodePart(withNonce.stdout, 1)["nonce"]?.stringValue == nonce)
            let second = try await Self.curl(
                url,
                [
                    authorization.stdout.trimmingCharacters(in: .newlines),
                    "DPoP: " + withNonce.stdout.trimmingCharacters(in: .newlines),
                ]
            )
            #expect(second.status == 200, "\(second.response)")
            #expect(server.verdicts == ["refused: the nonce is missing or stale", "accepted \(ann)"])
        }
    }

    @Test func bearerSessionsAndBadRequestsGetClearErrors() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let client = try daemon.connect()
            let noUser = try await client.errorCode("dpop_proof", ["htm": "GET", "htu": "https://api.example.com/"])
            #expect(noUser == "no_active_user")
            _ = try await Self.logIn(client, "ann@example.com")
            for params: [String: JSONValue] in [
                ["htu": "https://api.example.com/"],
                ["htm": "GET"],
                ["htm": "GE T", "htu": "https://api.example.com/"],
                ["htm": "GET", "htu": "ftp://api.example.com/"],
                ["htm": "GET", "htu": "https:///no-host"],
                ["htm": "GET", "htu": "https://api.example.com/a b"],
                ["htm": "GET", "htu": "https://api.example.com/", "nonce": "quote\"d"],
                ["htm": "GET", "htu": .string("https://api.example.com/" + String(repeating: "a", count: 5000))],
            ] {
                #expect(try await client.errorCode("dpop_proof", params) == "invalid_params", "\(params)")
            }
            // The daemon is still there and answers.
            #expect(try await client.result("dpop_proof", ["htm": "GET", "htu": "https://a.example/"])["proof"] != nil)
        }
        // A provider without dpop hands out bearer tokens, and no proofs.
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            #expect(try await client.result("access_token")["token_type"] == "Bearer")
            #expect(
                try await client.errorCode("dpop_proof", ["htm": "GET", "htu": "https://a.example/"]) == "not_supported"
            )
            let cli = try await CLITests.usher(daemon, ["dpop-proof", "--url", "https://a.example/"])
            #expect(cli.status == 1 && cli.stdout.isEmpty)
            #expect(cli.stderr.contains("not_supported") || cli.stderr.contains("bearer"), "\(cli.stderr)")
        }
    }

    @Test func theSessionKeySurvivesARestartSealedAtRest() async throws {
        let key = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let daemon = try DaemonProcess()
        let keyPath = daemon.directory.file("token.key")
        try daemon.directory.write("token.key", key + "\n")
        chmod(keyPath, 0o600)
        try daemon.directory.write(
            "usherd.toml",
            "[daemon]\ntoken_encryption_key = \"\(keyPath)\"\n" + Self.config + "\n"
        )
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let client = try daemon.connect()
            _ = try await Self.logIn(client, "ann@example.com")
            let before = try #require(
                try await client.result("dpop_proof", ["htm": "GET", "htu": "https://a.example/"])["proof"]?.stringValue
            )
            client.close()
            // Killed, not stopped: what was acknowledged is on disk.
            try await daemon.kill9()
            try await daemon.start()
            let after = try daemon.connect()
            let token = try #require(try await after.result("access_token")["access_token"]?.stringValue)
            let proof = try #require(
                try await after.result("dpop_proof", ["htm": "GET", "htu": "https://a.example/"])["proof"]?.stringValue
            )
            #expect(try Self.thumbprint(ofProof: proof) == Self.thumbprint(ofProof: before))
            #expect(try Self.thumbprint(ofProof: proof) == Self.decodePart(token, 1)["cnf"]?["jkt"]?.stringValue)
            try await daemon.stop()
            // Every secret column holds sealed text: nothing in the database is the key's base64url scalar in the
            // clear (the store test checks the column itself); here, the log never names it either.
            let log = (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""
            #expect(!log.contains(proof) && !log.contains(token))
        }
    }
}
