import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Outside credentials on the real daemon: JWTs and ID tokens signed by keys made here and published by a JWK set
/// server on 127.0.0.1, and an authentication function written as a shell script.
@Suite(.integrationHangGuard)
struct OutsideCredentialsTests {
    static let issuer = "https://auth.example.com"
    static let corpIssuer = "https://id.corp.example"

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    static func claims(_ changes: [String: JSONValue] = [:]) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": .string(Self.issuer), "aud": "usher", "sub": "user-1", "email": "ann@example.com",
            "iat": .int(Self.now), "exp": .int(Self.now + 600),
        ]
        claims.merge(changes) { _, new in new }
        return claims
    }

    /// A directory with the hook script, `jwks.json` served on loopback, and a port where nothing listens. The server
    /// is stopped and the directory removed after `body`.
    static func withOutsideWorld<T>(
        _ keys: [TestIssuerKey],
        _ body: (TestDirectory, StaticHTTPServer, _ deadURL: String) async throws -> T
    ) async throws -> T {
        let directory = try TestDirectory()
        defer { directory.remove() }
        _ = try TestHooks.install(in: directory)
        try directory.write("jwks.json", TestJWT.keySet(keys.map { $0.publicJWK() }))
        // A server started and stopped at once leaves a loopback port that refuses connections.
        let gone = try StaticHTTPServer(directory: directory.path)
        await gone.stop()
        let server = try StaticHTTPServer(directory: directory.path)
        do {
            let result = try await body(directory, server, gone.url("jwks.json"))
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    static func config(
        _ directory: TestDirectory,
        jwksURL: String,
        deadURL: String,
        timeout: String = "60s",
        maxConcurrent: Int = 3
    ) -> String {
        """
        [providers.local]
        type = "local"

        [providers.local.jwt]
        issuer = "\(Self.issuer)"
        audience = "usher"
        jwks_url = "\(jwksURL)"
        algorithms = ["RS256", "ES256"]
        leeway = "30s"

        [providers.local.id_token.corp]
        issuer = "\(Self.corpIssuer)"
        audience = ["usher-app", "usher-cli"]
        jwks_file = "\(directory.file("corp.json"))"

        [providers.local.id_token.down]
        issuer = "https://down.example"
        audience = "usher"
        jwks_url = "\(deadURL)"

        [providers.local.function]
        command = ["\(directory.file("hook.sh"))"]
        timeout = "\(timeout)"
        max_concurrent = \(maxConcurrent)
        """
    }

    static func jwt(_ token: String) -> [String: JSONValue] {
        ["credentials": ["type": "jwt", "token": .string(token)]]
    }

    static func function(_ mode: String, user: String = "ann") -> [String: JSONValue] {
        ["credentials": ["type": "function", "payload": ["mode": .string(mode), "user": .string(user)]]]
    }

    /// The error `(code, message)` of a request expected to fail.
    static func failure(
        _ connection: LineConnection,
        _ params: [String: JSONValue]
    ) async throws -> (code: String, message: String) {
        let response = try await connection.call("login", params)
        let error = try #require(response["error"]?.objectValue, "login succeeded: \(response)")
        return (error["code"]?.stringValue ?? "", error["message"]?.stringValue ?? "")
    }

    // MARK: Tokens

    /// libcurl and what it loads (OpenSSL, Kerberos, LDAP, ...) are about 8 MiB of a small daemon's memory: usherd
    /// maps them with the first request to a provider, not at start.
    @Test func libcurlIsLoadedByTheFirstRequestToAKeyServerAndNotBefore() async throws {
        let rsa = try TestIssuerKey.rsa(kid: "rsa-1")
        try await Self.withOutsideWorld([rsa]) { directory, server, deadURL in
            try directory.write("corp.json", TestJWT.keySet([]))
            let config = Self.config(directory, jwksURL: server.url("jwks.json"), deadURL: deadURL)
            try await DaemonProcess.with(config: config) { daemon in
                let client = try daemon.connect()
                // Read to the end: Foundation stops at the first short read, and /proc/PID/maps returns one at the
                // first line that does not fit a page.
                func mapsLibcurl() throws -> Bool {
                    let file = try #require(FileHandle(forReadingAtPath: "/proc/\(daemon.pid)/maps"))
                    defer { try? file.close() }
                    return String(decoding: file.readDataToEndOfFile(), as: UTF8.self).contains("/libcurl")
                }
                _ = try await client.result("providers")
                #expect(try !mapsLibcurl(), "libcurl mapped before any request to a provider")
                let user = try await client.result("login", Self.jwt(try rsa.sign(Self.claims())))["user"]
                #expect(user?["kind"] == "jwt", "the JWK set was fetched over HTTP")
                #expect(try mapsLibcurl())
            }
        }
    }

    @Test func jwtAndIDTokenLoginsOnTheRealDaemon() async throws {
        let rsa = try TestIssuerKey.rsa(kid: "rsa-1")
        let ec = TestIssuerKey.p256(kid: "ec-1")
        let rotated = try TestIssuerKey.rsa(kid: "rsa-2")
        let unpublished = try TestIssuerKey.rsa(kid: "rsa-3")
        let impostor = TestIssuerKey.p256(kid: "ec-1")
        let corp = TestIssuerKey.p256(kid: "corp-1")
        try await Self.withOutsideWorld([rsa, ec]) { directory, server, deadURL in
            try directory.write("corp.json", TestJWT.keySet([corp.publicJWK()]))
            let config = Self.config(directory, jwksURL: server.url("jwks.json"), deadURL: deadURL)
            var tokensSeen: [String] = []
            try await DaemonProcess.with(config: config) { daemon in
                let client = try daemon.connect()

                // providers lists the new credential types.
                let providers = try await client.result("providers")["providers"]?.arrayValue ?? []
                let local = try #require(providers.first { $0["name"] == "local" })
                #expect(
                    local["credentials"]
                        == ["email_password", "anonymous", "api_key", "jwt", "id_token", "function"]
                )

                // RS256 and ES256 tokens for the same subject: one user, logged in with the daemon's own tokens.
                let first = try rsa.sign(Self.claims())
                tokensSeen.append(first)
                let user = try await client.result("login", Self.jwt(first))["user"]
                let userID = try #require(user?["id"]?.stringValue)
                #expect(user?["kind"] == "jwt")
                #expect(user?["email"] == "ann@example.com")
                #expect(user?["refresh_token_expires_at"]?.stringValue != nil)
                let second = try ec.sign(Self.claims())
                tokensSeen.append(second)
                #expect(try await client.result("login", Self.jwt(second))["user"]?["id"]?.stringValue == userID)
                let access = try await client.result("access_token")["access_token"]?.stringValue
                #expect(access != nil && access != first && access != second)
                #expect(try await client.result("refresh")["user_id"]?.stringValue == userID)
                let someoneElse = try ec.sign(Self.claims(["sub": "user-2"]))
                #expect(try await client.result("login", Self.jwt(someoneElse))["user"]?["id"]?.stringValue != userID)

                // Every forgery and every wrong claim is invalid_credentials, saying which check failed.
                let refusals: [(String, String)] = [
                    (try impostor.sign(Self.claims()), "the signature does not verify"),
                    (try rsa.sign(Self.claims(["iss": "https://evil.example"])), "issuer"),
                    (try rsa.sign(Self.claims(["aud": "another-service"])), "audience"),
                    (try rsa.sign(Self.claims(["exp": .int(Self.now - 3600)])), "expired"),
                    (try rsa.sign(Self.claims(["nbf": .int(Self.now + 3600)])), "not valid yet"),
                    (TestJWT.unsigned(Self.claims(), kid: "rsa-1"), "unsupported algorithm"),
                    (
                        TestJWT.hs256(Self.claims(), secret: Array(rsa.publicPEM.utf8), kid: "rsa-1"),
                        "unsupported algorithm"
                    ),
                    (
                        TestJWT.hs256(Self.claims(), secret: Array(TestJWT.json(rsa.publicJWK()).utf8), kid: "rsa-1"),
                        "unsupported algorithm"
                    ),
                ]
                for (token, check) in refusals {
                    tokensSeen.append(token)
                    let (code, message) = try await Self.failure(client, Self.jwt(token))
                    #expect(code == "invalid_credentials", "\(check): \(message)")
                    #expect(message.contains(check), "\(message)")
                    #expect(!message.contains(token))
                }

                // Key rotation: a new kid makes the daemon fetch the set again.
                let fetches = server.requests.count
                #expect(fetches >= 1)
                try directory.write(
                    "jwks.json",
                    TestJWT.keySet([rsa.publicJWK(), ec.publicJWK(), rotated.publicJWK()])
                )
                let afterRotation = try rotated.sign(Self.claims())
                #expect(try await client.result("login", Self.jwt(afterRotation))["user"]?["id"]?.stringValue == userID)
                #expect(server.requests.count == fetches + 1)
                // A kid the server never had: refused.
                let unknown = try await Self.failure(client, Self.jwt(try unpublished.sign(Self.claims())))
                #expect(unknown.code == "invalid_credentials")
                #expect(unknown.message.contains("unknown key") && unknown.message.contains("rsa-3"))

                // The key server goes away: the cached keys keep working.
                await server.stop()
                #expect(
                    try await client.result("login", Self.jwt(try rsa.sign(Self.claims())))["user"]?["id"]?.stringValue
                        == userID
                )

                // ID tokens from a named issuer, with the client's nonce.
                let idToken = try corp.sign([
                    "iss": .string(Self.corpIssuer), "aud": ["usher-cli"], "sub": "e-1001", "email": "eve@corp.example",
                    "email_verified": true, "nonce": "n-42", "exp": .int(Self.now + 600),
                ])
                tokensSeen.append(idToken)
                let corpUser = try await client.result(
                    "login",
                    ["credentials": ["type": "id_token", "issuer": "corp", "token": .string(idToken), "nonce": "n-42"]]
                )["user"]
                #expect(corpUser?["kind"] == "id_token")
                #expect(corpUser?["email"] == "eve@corp.example")
                let wrongNonce = try await Self.failure(
                    client,
                    ["credentials": ["type": "id_token", "issuer": "corp", "token": .string(idToken), "nonce": "n-43"]]
                )
                #expect(wrongNonce.code == "invalid_credentials" && wrongNonce.message.contains("nonce"))
                let unknownIssuer = try await Self.failure(
                    client,
                    ["credentials": ["type": "id_token", "issuer": "facebook", "token": .string(idToken)]]
                )
                #expect(unknownIssuer.code == "unsupported_credentials")
                // The keys of "down" were never fetched and cannot be: provider_unavailable.
                let down = try await Self.failure(
                    client,
                    ["credentials": ["type": "id_token", "issuer": "down", "token": .string(idToken)]]
                )
                #expect(down.code == "provider_unavailable", "\(down.message)")

                // The same subject logs in as the same user after a restart too.
                try await daemon.restart()
                let again = try daemon.connect()
                let afterRestart = try corp.sign([
                    "iss": .string(Self.corpIssuer), "aud": "usher-app", "sub": "e-1001", "exp": .int(Self.now + 600),
                ])
                #expect(
                    try await again.result(
                        "login",
                        ["credentials": ["type": "id_token", "issuer": "corp", "token": .string(afterRestart)]]
                    )["user"]?["id"] == corpUser?["id"]
                )

                // No token ever reaches the log.
                let log = daemon.log
                #expect(log.contains("login"))
                for token in tokensSeen { #expect(!log.contains(token)) }
            }
        }
    }
}
