import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The authentication function on the real daemon: its outcomes, and logins that queue for it.
extension OutsideCredentialsTests {
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
}
