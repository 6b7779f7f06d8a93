import Crypto
import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// The wire protocol on the real daemon: framing, pipelining, malformed input, events, and what survives a restart.
@Suite(.integrationHangGuard)
struct ProtocolTests {
    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            // Twenty requests in one write, with string and number ids and a CRLF line ending among them.
            var batch = ""
            for index in 0..<20 {
                let id = index.isMultiple(of: 2) ? "\(index)" : "\"r\(index)\""
                let method = ["hello", "current_user", "list_users", "status"][index % 4]
                batch += "{\"id\":\(id),\"method\":\"\(method)\"}" + (index == 7 ? "\r\n" : "\n")
            }
            try client.send(raw: Array(batch.utf8))
            for index in 0..<20 {
                let response = try await client.readObject()
                let expected: JSONValue = index.isMultiple(of: 2) ? .int(Int64(index)) : .string("r\(index)")
                #expect(response["id"] == expected)
                #expect(response["result"] != nil)
            }
        }
    }

    @Test func malformedLinesGetErrorsAndTheConnectionCarriesOn() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let cases: [(String, String)] = [
                ("not json", "invalid_request"),
                ("[1,2,3]", "invalid_request"),
                ("\"hello\"", "invalid_request"),
                ("{\"id\":1}", "invalid_request"),
                ("{\"id\":2,\"method\":42}", "invalid_request"),
                ("{\"id\":3,\"method\":\"teleport\"}", "unknown_method"),
                ("{\"id\":4,\"method\":\"switch_user\"}", "invalid_params"),
                ("{\"id\":5,\"method\":\"switch_user\",\"params\":{\"user_id\":7}}", "invalid_params"),
                ("{\"id\":6,\"method\":\"login\",\"params\":[]}", "invalid_params"),
                ("{\"id\":7,\"method\":\"access_token\",\"params\":{\"min_valid\":-5}}", "invalid_params"),
                ("{\"id\":{\"a\":1},\"method\":\"hello\"}", "invalid_request"),
                ("{\"id\":8,\"method\":\"hello\"", "invalid_request"),
                (String(repeating: "[", count: 500) + String(repeating: "]", count: 500), "invalid_request"),
            ]
            for (line, code) in cases {
                try client.send(line)
                let response = try await client.readObject()
                #expect(response["error"]?["code"]?.stringValue == code, "for \(line)")
                #expect(response["error"]?["message"]?.stringValue?.isEmpty == false)
            }
            // The id is echoed when it could be read.
            try client.send("{\"id\":\"abc\",\"method\":\"nope\"}")
            #expect(try await client.readObject()["id"] == "abc")
            // Unknown fields are ignored; invalid UTF-8 and NUL bytes are refused without harm.
            try client.send("{\"id\":9,\"method\":\"hello\",\"extra\":{\"x\":[1,2]}}")
            #expect(try await client.readObject()["result"]?["server"] == "usherd")
            try client.send(
                raw: [UInt8](#"{"id":10,"method":"hel"#.utf8) + [0xFF, 0xFE] + [UInt8](#"lo"}"#.utf8) + [10]
            )
            #expect(try await client.readObject()["error"]?["code"] == "invalid_request")
            try client.send(raw: [UInt8](#"{"id":11,"method":"hello"}"#.utf8) + [0, 10])
            #expect(try await client.readObject()["error"]?["code"] == "invalid_request")
            // Blank lines are skipped; the connection still works.
            try client.send("")
            #expect(try await client.result("hello")["protocol"] == 1)
        }
    }

    @Test func aLineOverTheLimitIsRefusedAndTheConnectionClosed() async throws {
        try await DaemonProcess.with(config: "[limits]\nmax_line_bytes = 2048\n") { daemon in
            let client = try daemon.connect()
            // Exactly at the limit is fine.
            let padding = String(repeating: "x", count: 2048 - #"{"method":"hello","pad":""}"#.utf8.count)
            try client.send(#"{"method":"hello","pad":"\#(padding)"}"#)
            #expect(try await client.readObject()["result"] != nil)
            // One byte more, without a newline: refused as soon as it is over, then the connection closes.
            try client.send(raw: Array(repeating: UInt8(ascii: "x"), count: 2049))
            #expect(try await client.readObject()["error"]?["code"] == "line_too_long")
            #expect(try await client.readLine() == nil)
            // The daemon carries on for everyone else.
            #expect(try await daemon.connect().result("hello")["server"] == "usherd")
        }
    }

    @Test func aRequestSplitByteByByteIsAnswered() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            for byte in Array(#"{"id":"slow","method":"hello"}"#.utf8) + [10] {
                try client.send(raw: [byte])
            }
            #expect(try await client.readObject()["id"] == "slow")
        }
    }

    /// Lines cut anywhere between writes (inside a `\r\n`, inside a line, the last one never terminated) are put
    /// back together. Each write but the first is sent once the daemon has answered a line of the write before it,
    /// so that it has read that write, cut included, before the next one arrives.
    @Test func linesCutAcrossReadsAreJoined() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            try client.send(raw: Array("{\"id\":1,\"method\":\"hello\"}\n{\"id\":2,\"method\":\"hello\"}\r".utf8))
            #expect(try await client.readObject()["id"] == 1)
            try client.send(raw: Array("\n{\"id\":3,\"meth".utf8))
            #expect(try await client.readObject()["id"] == 2)
            try client.send(raw: Array("od\":\"hello\"}\n{\"id\":4,".utf8))
            #expect(try await client.readObject()["id"] == 3)
            try client.send(raw: Array("\"method\":\"hello\"}".utf8))
            client.closeWrite()
            let last = try await client.readObject()
            #expect(last["id"] == 4)
            #expect(last["error"] == nil)
            #expect(try await client.readLine() == nil)
        }
    }

    /// Writes `count` logged-out users, each with a long name, straight into a fresh state directory (before the
    /// daemon starts), so that `list_users` answers with several megabytes.
    static func seedUsers(_ count: Int, into stateDirectory: String) async throws {
        #expect(mkdir(stateDirectory, 0o700) == 0)
        let database = try AppDatabase(path: "\(stateDirectory)/usher.sqlite")
        let createdAt = Timestamp(millisecondsSinceEpoch: 1_700_000_000_000)
        let padding = String(repeating: "n", count: 2000)
        let users = (1...count).map { index in
            User(
                id: User.id(provider: "local", subject: "s\(index)"),
                provider: "local",
                subject: "s\(index)",
                kind: "email_password",
                email: "user\(index)@example.com",
                name: "User \(index) \(padding)",
                state: .loggedOut,
                addedGeneration: Int64(index),
                createdAt: createdAt,
                lastLoginAt: nil,
                lastActiveAt: nil,
                activeGeneration: 0,
                tokens: nil,
                providerData: nil
            )
        }
        try await database.commit(SessionChange(generation: Int64(count), saved: users, deleted: []))
    }

    /// A daemon whose `list_users` answer is several megabytes: far more than a socket buffer holds.
    static func withManyUsers(_ body: (DaemonProcess) async throws -> Void) async throws {
        let daemon = try DaemonProcess()
        try await Self.seedUsers(Self.manyUsers, into: daemon.stateDirectory)
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            try await body(daemon)
        }
    }

    static let manyUsers = 2000

    @Test func aPeerThatClosesItsSendingSideGetsEveryAnswerInFull() async throws {
        try await Self.withManyUsers { daemon in
            let client = try daemon.connect()
            client.timeout = .seconds(60)
            // Two requests, the last without its newline, then the end of the input (what `socat` does).
            try client.send(raw: Array("{\"id\":1,\"method\":\"list_users\"}\n{\"id\":2,\"method\":\"status\"}".utf8))
            client.closeWrite()
            let line = try #require(try await client.readLine())
            #expect(line.utf8.count > 4_000_000, "several megabytes: many times what a socket buffer holds")
            let users = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
            #expect(users["id"] == 1)
            #expect(users["result"]?["users"]?.arrayValue?.count == Self.manyUsers)
            let status = try await client.readObject()
            #expect(status["id"] == 2)
            #expect(status["result"]?["users"]?["logged_out"] == .int(Int64(Self.manyUsers)))
            // Then, and only then, the daemon closes.
            #expect(try await client.readLine() == nil)
        }
    }

    /// A reader with a tiny receive buffer makes the long answer back up and drain again and again while it is
    /// written piece by piece: it still gets every piece once, in order.
    @Test func aSlowReaderGetsALongListWholeAndInOrder() async throws {
        try await Self.withManyUsers { daemon in
            let slow = try daemon.connect()
            slow.shrinkReceiveBuffer()
            for round in 1...3 {
                try slow.send("{\"id\":\(round),\"method\":\"list_users\"}")
                let line = try #require(try await slow.readLine())
                let answer = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
                #expect(answer["id"] == .int(Int64(round)))
                let ids = answer["result"]?["users"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
                #expect(ids.count == Self.manyUsers)
                #expect(Set(ids).count == Self.manyUsers, "a user listed twice")
            }
        }
    }

    @Test func socatGetsTheWholeAnswerAndItsLastUnterminatedRequestAnswered() async throws {
        try await Self.withManyUsers { daemon in
            // `-t 60`: socat's own wait for the rest of the answer after its input ended (0.5 s by default) is a
            // hang guard here, not something the test measures.
            let socat = ["-t", "60", "-", "UNIX-CONNECT:\(daemon.socketPath)"]
            let big = try await runProcess(
                "/usr/bin/socat",
                socat,
                stdin: "{\"method\":\"list_users\"}\n",
                timeout: .seconds(90)
            )
            #expect(big.status == 0)
            let lines = big.stdout.split(separator: "\n")
            #expect(lines.count == 1)
            let users = try JSONDecoder().decode(JSONValue.self, from: Data((lines.first ?? "").utf8))
            #expect(users["result"]?["users"]?.arrayValue?.count == Self.manyUsers)

            let unterminated = try await runProcess(
                "/usr/bin/socat",
                socat,
                stdin: "{\"method\":\"status\"}",
                timeout: .seconds(90)
            )
            #expect(unterminated.status == 0)
            let status = try JSONDecoder().decode(JSONValue.self, from: Data(unterminated.stdout.utf8))
            #expect(status["result"]?["users"]?["logged_out"] == .int(Int64(Self.manyUsers)))
        }
    }

    @Test func aSubscriberSeesAnotherConnectionsChanges() async throws {
        try await DaemonProcess.with { daemon in
            let actor = try daemon.connect()
            let watcher = try daemon.connect()
            _ = try await actor.result("register", ["email": "a@example.com", "password": "secret123"])
            _ = try await actor.result("register", ["email": "b@example.com", "password": "secret123"])
            let subscribed = try await watcher.result("subscribe")
            #expect(subscribed["generation"] == 0)
            #expect(subscribed["subscribed"]?.arrayValue?.contains("user_logged_in") == true)

            let a = try #require(
                try await actor.result("login", SessionRulesTests.emailLogin("a@example.com"))["user"]?["id"]?
                    .stringValue
            )
            let loggedIn = try await watcher.nextEvent()
            #expect(loggedIn["event"] == "user_logged_in")
            #expect(loggedIn["generation"] == 1)
            #expect(loggedIn["data"]?["user"]?["id"]?.stringValue == a)
            let activeChanged = try await watcher.nextEvent()
            #expect(activeChanged["event"] == "active_user_changed")
            #expect(activeChanged["data"] == ["previous_user_id": nil, "user_id": .string(a)])
            #expect(activeChanged["generation"] == 1)

            let b = try #require(
                try await actor.result("login", SessionRulesTests.emailLogin("b@example.com"))["user"]?["id"]?
                    .stringValue
            )
            _ = try await watcher.nextEvent()
            _ = try await watcher.nextEvent()
            _ = try await actor.result("switch_user", ["user_id": .string(a)])
            let switched = try await watcher.nextEvent()
            #expect(switched["event"] == "active_user_changed")
            #expect(switched["generation"] == 3)
            #expect(switched["data"] == ["previous_user_id": .string(b), "user_id": .string(a)])

            _ = try await actor.result("remove_user", ["user_id": .string(a)])
            let removedEvent = try await watcher.nextEvent()
            #expect(removedEvent["event"] == "user_removed")
            #expect(removedEvent["generation"] == 4)
            let handedOver = try await watcher.nextEvent()
            #expect(handedOver["data"] == ["previous_user_id": .string(a), "user_id": .string(b)])
            #expect(handedOver["generation"] == 4)

            // The subscriber's own requests are still answered, with events kept apart.
            #expect(try await watcher.result("current_user")["user"]?["id"]?.stringValue == b)

            // A filtered subscription only gets what it asked for.
            let filtered = try daemon.connect()
            _ = try await filtered.result("subscribe", ["events": ["user_logged_out"]])
            _ = try await actor.result("logout")
            let loggedOut = try await filtered.nextEvent()
            #expect(loggedOut["event"] == "user_logged_out")
            #expect(loggedOut["data"] == ["user_id": .string(b), "reason": "requested"])
            #expect(try await filtered.errorCode("subscribe", ["events": ["nope"]]) == "invalid_params")
        }
    }

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

    @Test func theSocketHasItsModeWhenTheDaemonIsReadyAndALinkAtItsPathIsRefused() async throws {
        let daemon = try DaemonProcess(config: "[daemon]\nsocket_mode = \"0660\"\n")
        try await DaemonProcess.using(daemon) { daemon in
            let notify = try NotifyListener(path: daemon.directory.file("notify"))
            var environment = ProcessInfo.processInfo.environment
            for key in ["WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID"] { environment[key] = nil }
            environment["NOTIFY_SOCKET"] = notify.address
            try await daemon.start(environment: environment, waitForSocket: false)
            _ = try await notify.waitFor("READY=1", timeout: .seconds(60))
            var info = stat()
            #expect(lstat(daemon.socketPath, &info) == 0)
            #expect(info.st_mode & S_IFMT == S_IFSOCK)
            #expect(info.st_mode & 0o7777 == 0o660)
            // Nothing of the daemon's is left next to the socket.
            let entries = try FileManager.default.contentsOfDirectory(atPath: daemon.directory.path)
            #expect(!entries.contains { $0.hasPrefix(".usherd-") }, "\(entries)")
            try await daemon.stop()

            // A symbolic link at the socket path (to a file of root's) is neither followed nor replaced: the
            // daemon refuses to start and says why.
            let target = daemon.directory.file("target")
            try "secret".write(toFile: target, atomically: false, encoding: .utf8)
            chmod(target, 0o600)
            unlink(daemon.socketPath)
            #expect(symlink(target, daemon.socketPath) == 0)
            let refused = try await runProcess(
                try BuiltProducts.path(of: "usherd"),
                [
                    "--config", daemon.configPath, "--socket", daemon.socketPath, "--state-directory",
                    daemon.stateDirectory,
                ]
            )
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("is a symbolic link"), "\(refused.stderr)")
            #expect(lstat(target, &info) == 0 && info.st_mode & 0o7777 == 0o600)
            #expect(lstat(daemon.socketPath, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
        }
    }

    @Test func aLiveSocketIsNeverStolenAndAStaleOneIsReplaced() async throws {
        try await DaemonProcess.with { daemon in
            // A second daemon on the same socket refuses to start and leaves the first one serving.
            let usherd = try BuiltProducts.path(of: "usherd")
            let second = try await runProcess(
                usherd,
                ["--socket", daemon.socketPath, "--state-directory", daemon.directory.file("other")]
            )
            #expect(second.status != 0)
            #expect(second.stderr.contains("already listening"))
            #expect(try await daemon.connect().result("hello")["server"] == "usherd")

            // After a crash the socket file stays behind; the next start replaces it.
            try await daemon.kill9()
            #expect(FileManager.default.fileExists(atPath: daemon.socketPath))
            try await daemon.start()
            #expect(try await daemon.connect().result("hello")["server"] == "usherd")
        }
    }

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

    @Test func socatCanQueryTheDaemon() async throws {
        try await DaemonProcess.with { daemon in
            let output = try await runProcess(
                "/usr/bin/socat",
                ["-", "UNIX-CONNECT:\(daemon.socketPath)"],
                stdin:
                    "{\"method\":\"current_user\"}\n{\"method\":\"login\",\"params\":{\"credentials\":{\"type\":\"anonymous\"}}}\n"
            )
            #expect(output.status == 0)
            let lines = output.stdout.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.first == #"{"id":null,"result":{"generation":0,"user":null}}"#)
            #expect(lines.last?.contains(#""kind":"anonymous""#) == true)
        }
    }

    @Test func accessTokensAreES256JWTsVerifiableWithJWKS() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "joe@example.com", "password": "secret123"])
            let user = try #require(
                try await client.result("login", SessionRulesTests.emailLogin("joe@example.com"))["user"]?["id"]?
                    .stringValue
            )
            let token = try await client.result("access_token")
            #expect(token["token_type"] == "Bearer")
            #expect(token["user_id"]?.stringValue == user)
            let expiresIn = try #require(token["expires_in"]?.intValue)
            #expect((1700...1800).contains(expiresIn))
            let jwt = try #require(token["access_token"]?.stringValue)
            let parts = jwt.split(separator: ".").map(String.init)
            #expect(parts.count == 3)

            let key = try #require(try await client.result("jwks")["keys"]?.arrayValue?.first)
            #expect(key["kty"] == "EC")
            #expect(key["crv"] == "P-256")
            #expect(key["alg"] == "ES256")
            func base64URL(_ text: String) -> Data? {
                var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                while base64.count % 4 != 0 { base64 += "=" }
                return Data(base64Encoded: base64)
            }
            let x = try #require(key["x"]?.stringValue.flatMap(base64URL))
            let y = try #require(key["y"]?.stringValue.flatMap(base64URL))
            let publicKey = try P256.Signing.PublicKey(rawRepresentation: x + y)
            let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(base64URL(parts[2])))
            #expect(publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))

            let header = try JSONDecoder().decode(JSONValue.self, from: try #require(base64URL(parts[0])))
            #expect(header["alg"] == "ES256")
            #expect(header["kid"] == key["kid"])
            let claims = try JSONDecoder().decode(JSONValue.self, from: try #require(base64URL(parts[1])))
            #expect(claims["sub"]?.stringValue == user)
            #expect(claims["email"] == "joe@example.com")
            #expect(claims["iss"] == "usherd:local")
            #expect(claims["jti"]?.stringValue?.isEmpty == false)
            let iat = try #require(claims["iat"]?.intValue)
            let exp = try #require(claims["exp"]?.intValue)
            #expect(exp - iat == 1800)
        }
    }
}
