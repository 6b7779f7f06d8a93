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

    // MARK: The authentication function

    @Test func functionOutcomesOnTheRealDaemon() async throws {
        try await Self.withOutsideWorld([]) { directory, server, deadURL in
            // The timeout is a hang guard: the hang mode's message and its processes' end are
            // FunctionProcessTreeTests' (a short timeout here would make the outcomes depend on the machine's speed).
            let config = Self.config(directory, jwksURL: server.url("jwks.json"), deadURL: deadURL)
            try await DaemonProcess.with(config: config) { daemon in
                let client = try daemon.connect()
                let accepted = try await client.result("login", Self.function("accept", user: "badge-7"))["user"]
                let userID = try #require(accepted?["id"]?.stringValue)
                #expect(accepted?["kind"] == "function")
                #expect(accepted?["email"] == "badge-7@example.com")
                #expect(accepted?["name"] == "Hook User")
                #expect(
                    try await client.result("login", Self.function("accept", user: "badge-7"))["user"]?["id"]?
                        .stringValue == userID
                )

                let expectations: [(String, String)] = [
                    ("refuse", "no such badge"),
                    ("crash", "crashed (signal 11)"),
                    ("garbage", "not a JSON object"),
                    ("array", "not a JSON object"),
                    ("huge", "output is too large"),
                    ("fail", "exited with status 3"),
                ]
                for (mode, text) in expectations {
                    let (code, message) = try await Self.failure(client, Self.function(mode))
                    #expect(code == "invalid_credentials", "\(mode): \(code) \(message)")
                    #expect(message.contains(text), "\(mode): \(message)")
                }
                let badPayload = try await Self.failure(client, ["credentials": ["type": "function", "payload": 7]])
                #expect(badPayload.code == "invalid_params")

                // Stderr goes to the debug log; the daemon is fine after all of that.
                let chatty = try await client.result("login", Self.function("stderr", user: "chatty"))["user"]?["id"]
                #expect(chatty != nil)
                #expect(daemon.log.contains("debugging output from the hook"))
                #expect(try await client.result("current_user")["user"]?["id"] == chatty)
                #expect(daemon.isRunning)
            }
        }
    }

    @Test func tenConcurrentFunctionLogins() async throws {
        try await Self.withOutsideWorld([]) { directory, server, deadURL in
            // The gated hook holds every run until the gate opens, so what the test checks while they are held holds
            // at any machine speed; the timeout is only a hang guard.
            let gate = try GatedHook.install(in: directory)
            let config = Self.config(
                directory,
                jwksURL: server.url("jwks.json"),
                deadURL: deadURL,
                timeout: "2m",
                maxConcurrent: 3
            ).replacingOccurrences(of: directory.file("hook.sh"), with: gate)
            try await DaemonProcess.with(config: config) { daemon in
                // All ten requests go out first, each on its own connection, so that the daemon has them all at once;
                // the answers are read afterwards.
                var connections: [LineConnection] = []
                for index in 0..<10 {
                    let connection = try daemon.connect()
                    let request: [String: JSONValue] = [
                        "id": 1, "method": "login", "params": .object(Self.function("gated", user: "user-\(index)")),
                    ]
                    try connection.send(TestJWT.json(request))
                    connections.append(connection)
                }
                try await GatedHook.waitUntilStarted(3, in: directory)
                // Three runs hold the three slots and wait for the gate; the other seven wait in line, and other
                // requests are answered meanwhile.
                _ = try await daemon.connect().result("status")
                #expect(GatedHook.started(in: directory) == 3)
                try GatedHook.open(in: directory)
                var users: [String] = []
                for connection in connections {
                    let response = try await connection.readObject()
                    users.append(try #require(response["result"]?["user"]?["id"]?.stringValue, "\(response)"))
                }
                #expect(Set(users).count == 10)
                let runs = try TestHooks.runs(in: directory)
                #expect(runs.count == 10)
                #expect(TestHooks.maximumOverlap(runs) == 3, "more than max_concurrent functions ran at once")
                let listed = try await daemon.connect().result("list_users")["users"]?.arrayValue ?? []
                #expect(listed.count == 10)
            }
        }
    }

    @Test func aLoginWaitsItsTurnHoweverLongTheLine() async throws {
        try await Self.withOutsideWorld([]) { directory, server, deadURL in
            let gate = try GatedHook.install(in: directory)
            let config = Self.config(
                directory,
                jwksURL: server.url("jwks.json"),
                deadURL: deadURL,
                timeout: "5s",
                maxConcurrent: 1
            ).replacingOccurrences(of: directory.file("hook.sh"), with: gate)
            try await DaemonProcess.with(config: config) { daemon in
                // One slot, three logins, and the gate stays shut: every run takes its whole timeout, so the last in
                // line waits for two of them, twice the timeout. It must still get its turn (it used to be turned
                // away as "busy" once it had waited one timeout).
                var connections: [LineConnection] = []
                for index in 0..<3 {
                    let connection = try daemon.connect()
                    let request: [String: JSONValue] = [
                        "id": 1, "method": "login", "params": .object(Self.function("gated", user: "line-\(index)")),
                    ]
                    try connection.send(TestJWT.json(request))
                    connections.append(connection)
                }
                for connection in connections {
                    let response = try await connection.readObject()
                    let message = response["error"]?["message"]?.stringValue ?? "\(response)"
                    #expect(message == "the authentication function did not answer within 5s and was stopped")
                }
                #expect(GatedHook.started(in: directory) == 3)
            }
        }
    }

    // MARK: Configuration

    @Test(arguments: [
        (
            "[providers.local.jwt]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"/k.json\"\nbogus = 1\n",
            "providers.local.jwt.bogus"
        ),
        (
            "[providers.local.jwt]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"/k.json\"\nalgorithms = [\"HS256\"]\n",
            "providers.local.jwt.algorithms"
        ),
        (
            "[providers.local.jwt]\nissuer = \"i\"\naudience = \"a\"\njwks_url = \"http://auth.example.com/k\"\n",
            "providers.local.jwt.jwks_url"
        ),
        (
            "[providers.local.jwt]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"/k\"\njwks_url = \"https://a/k\"\n",
            "providers.local.jwt"
        ),
        ("[providers.local.jwt]\naudience = \"a\"\njwks_file = \"/k.json\"\n", "providers.local.jwt.issuer"),
        (
            "[providers.local.id_token.google]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"/k\"\nsubject_claim = \"x\"\n",
            "providers.local.id_token.google.subject_claim"
        ),
        ("[providers.local.function]\ncommand = [\"auth-hook\"]\n", "providers.local.function.command"),
        (
            "[providers.local.function]\ncommand = [\"/bin/true\"]\nmax_concurrent = 0\n",
            "providers.local.function.max_concurrent"
        ),
        (
            "[providers.local.function]\ncommand = [\"/bin/true\"]\ntimeout = \"10ms\"\n",
            "providers.local.function.timeout"
        ),
        ("[providers.local.function]\ncommand = [\"/bin/true\"]\nshell = true\n", "providers.local.function.shell"),
    ])
    func badConfigurationsNameTheKeyAndTheFile(_ section: String, key: String) async throws {
        try await expectConfigurationError("[providers.local]\ntype = \"local\"\n\n" + section, naming: key)
    }

    // MARK: The CLI

    @Test func loginFlagsOfTheCLI() async throws {
        let rsa = try TestIssuerKey.rsa(kid: "rsa-1")
        let corp = TestIssuerKey.p256(kid: "corp-1")
        try await Self.withOutsideWorld([rsa]) { directory, server, deadURL in
            try directory.write("corp.json", TestJWT.keySet([corp.publicJWK()]))
            let config = Self.config(directory, jwksURL: server.url("jwks.json"), deadURL: deadURL)
            try await DaemonProcess.with(config: config) { daemon in
                let token = try rsa.sign(Self.claims(["email": "cli@example.com"]))
                let jwt = try await CLITests.usher(daemon, ["login", "--jwt-stdin"], stdin: token + "\n")
                #expect(jwt.status == 0, "\(jwt.stderr)")
                #expect(jwt.stdout.contains("cli@example.com") && !jwt.stdout.contains(token))

                let idToken = try corp.sign([
                    "iss": .string(Self.corpIssuer), "aud": "usher-cli", "sub": "e-7", "email": "eve@corp.example",
                    "email_verified": true, "nonce": "abc", "exp": .int(Self.now + 600),
                ])
                let viaIDToken = try await CLITests.usher(
                    daemon,
                    ["login", "--id-token", "corp", "--token-stdin", "--nonce", "abc"],
                    stdin: idToken + "\n"
                )
                #expect(viaIDToken.status == 0, "\(viaIDToken.stderr)")
                #expect(viaIDToken.stdout.contains("eve@corp.example"))

                let function = try await CLITests.usher(
                    daemon,
                    ["login", "--function-stdin"],
                    stdin: #"{"mode": "accept", "user": "kiosk"}"#
                )
                #expect(function.status == 0, "\(function.stderr)")
                #expect(function.stdout.contains("kiosk@example.com"))

                // The daemon's refusals: exit 1 with the code.
                let refused = try await CLITests.usher(
                    daemon,
                    ["login", "--function-stdin"],
                    stdin: #"{"mode": "refuse"}"# + "\n"
                )
                #expect(refused.status == 1)
                #expect(refused.stderr.contains("invalid_credentials") && refused.stderr.contains("no such badge"))
                let expired = try await CLITests.usher(
                    daemon,
                    ["login", "--jwt-stdin"],
                    stdin: try rsa.sign(Self.claims(["exp": .int(Self.now - 3600)])) + "\n"
                )
                #expect(expired.status == 1)
                #expect(expired.stderr.contains("invalid_credentials") && expired.stderr.contains("expired"))

                // Usage errors: exit 2, nothing sent.
                let usage: [[String]] = [
                    ["login", "--jwt-stdin", "--anonymous"],
                    ["login", "--id-token", "corp"],
                    ["login", "--token-stdin"],
                    ["login", "--jwt-stdin", "--nonce", "abc"],
                    ["login", "--function", #"{"mode": "accept", "user": "argv"}"#],
                    ["login", "--function-stdin", "--id-token", "corp", "--token-stdin"],
                ]
                for arguments in usage {
                    let result = try await CLITests.usher(daemon, arguments, stdin: "x\n")
                    #expect(result.status == 2, "\(arguments): \(result.stderr)")
                }
                let users = try await daemon.connect().result("list_users")["users"]?.arrayValue ?? []
                #expect(users.count == 3)
            }
        }
    }
}
