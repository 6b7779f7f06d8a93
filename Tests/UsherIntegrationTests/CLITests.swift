import Foundation
import Synchronization
import Testing
import UsherProtocol
import UsherTestSupport

/// The `usher` CLI against the real daemon: what a person sees, and the exit codes scripts rely on.
@Suite(.integrationHangGuard)
struct CLITests {
    static func usher(
        _ daemon: DaemonProcess?,
        _ arguments: [String],
        stdin: String = ""
    ) async throws -> ProcessOutput {
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "USHER_SOCKET")
        if let daemon { environment["USHER_SOCKET"] = daemon.socketPath }
        return try await runProcess(
            try BuiltProducts.path(of: "usher"),
            arguments,
            stdin: stdin,
            environment: environment
        )
    }

    @Test func aWholeSessionThroughTheCLI() async throws {
        try await DaemonProcess.with { daemon in
            let register = try await Self.usher(
                daemon,
                ["register", "--email", "joe@example.com", "--password-stdin"],
                stdin: "secret123\n"
            )
            #expect(register.status == 0, "\(register.stderr)")
            let login = try await Self.usher(
                daemon,
                ["login", "--email", "joe@example.com", "--password-stdin"],
                stdin: "secret123\n"
            )
            #expect(login.status == 0)
            #expect(login.stdout.contains("joe@example.com"))
            #expect(!login.stdout.contains("secret123"))
            #expect(try await Self.usher(daemon, ["login", "--anonymous"]).status == 0)

            // The table lists both, aligned, with the active one marked.
            let users = try await Self.usher(daemon, ["users"])
            #expect(users.status == 0)
            let rows = users.stdout.split(separator: "\n").map(String.init)
            #expect(rows.count == 3)
            #expect(rows[0].contains("USER") && rows[0].contains("STATE") && rows[0].contains("TOKEN"))
            #expect(rows[1].hasPrefix(" ") && rows[1].contains("joe@example.com"))
            // The anonymous user has no email or name: its id names it.
            #expect(rows[2].hasPrefix("*") && rows[2].contains("u_"))
            let stateColumn = rows[0].range(of: "STATE")!.lowerBound.utf16Offset(in: rows[0])
            #expect(
                rows.dropFirst().allSatisfy { row in
                    row.count > stateColumn && row[row.index(row.startIndex, offsetBy: stateColumn)] == "l"
                }
            )

            // Switch by email; whoami follows.
            #expect(try await Self.usher(daemon, ["switch", "JOE@example.com"]).status == 0)
            let whoami = try await Self.usher(daemon, ["whoami"])
            #expect(whoami.stdout.contains("joe@example.com"))

            // `token` prints the token and nothing else, for $(usher token).
            let token = try await Self.usher(daemon, ["token", "--min-valid", "60"])
            #expect(token.status == 0)
            let jwt = token.stdout.trimmingCharacters(in: .newlines)
            #expect(token.stdout == jwt + "\n")
            #expect(jwt.split(separator: ".").count == 3)
            let direct = try await daemon.connect().result("access_token")
            #expect(direct["access_token"]?.stringValue == jwt)

            // --json prints the daemon's result as it sent it.
            let json = try await Self.usher(daemon, ["--json", "status"])
            let status = try JSONDecoder().decode(JSONValue.self, from: Data(json.stdout.utf8))
            #expect(status["users"]?["logged_in"] == 2)

            // API keys: shown once, listed by name, usable to log in.
            let created = try await Self.usher(daemon, ["api-key", "create", "laptop"])
            let key = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(key.hasPrefix("usher_"))
            #expect(created.stderr.contains("will not be shown again"))
            let listed = try await Self.usher(daemon, ["api-key", "list"])
            #expect(listed.stdout.contains("laptop") && !listed.stdout.contains(key))
            #expect(try await Self.usher(daemon, ["logout"]).status == 0)
            let viaKey = try await Self.usher(daemon, ["login", "--api-key-stdin"], stdin: key + "\n")
            #expect(viaKey.status == 0)
            #expect(viaKey.stdout.contains("joe@example.com"))

            // refresh and call.
            let refresh = try await Self.usher(daemon, ["refresh"])
            #expect(refresh.status == 0)
            let call = try await Self.usher(daemon, ["call", "list_users"])
            #expect(
                try JSONDecoder().decode(JSONValue.self, from: Data(call.stdout.utf8))["users"]?.arrayValue?.count == 2
            )

            // remove by email.
            #expect(try await Self.usher(daemon, ["remove", "joe@example.com"]).status == 0)
            #expect(!(try await Self.usher(daemon, ["users"])).stdout.contains("joe@example.com"))
        }
    }

    @Test func exitCodesTellScriptsWhatHappened() async throws {
        try await DaemonProcess.with { daemon in
            // 1: the daemon answered with an error, named on stderr with its code.
            let unknown = try await Self.usher(daemon, ["switch", "u_nobody"])
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("user_not_found"))
            // 4: nobody is logged in.
            let noUser = try await Self.usher(daemon, ["token"])
            #expect(noUser.status == 4)
            #expect(noUser.stderr.contains("no_active_user"))
            #expect(noUser.stdout.isEmpty)
            let badCall = try await Self.usher(daemon, ["call", "teleport"])
            #expect(badCall.status == 1)
            #expect(badCall.stderr.contains("unknown_method"))

            // 2: usage errors.
            #expect(try await Self.usher(daemon, ["login", "--anonymous", "--email", "a@example.com"]).status == 2)
            #expect(try await Self.usher(daemon, ["frobnicate"]).status == 2)
            #expect(try await Self.usher(daemon, ["call", "status", "not json"]).status == 2)
            #expect(try await Self.usher(daemon, ["--help"]).status == 0)
        }
        // 3: nothing listens there; the message says where it looked.
        let missing = try await Self.usher(nil, ["status", "--socket", "/tmp/usher-nothing-here.sock"])
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("/tmp/usher-nothing-here.sock"))
    }

    @Test func watchPrintsEventsAsTheyHappen() async throws {
        try await DaemonProcess.with { daemon in
            let output = try ProcessPipe()
            let printed = Mutex("")
            output.reading.readabilityHandler = { handle in
                let data = handle.availableData
                printed.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
            let process = try SpawnedProcess(
                try BuiltProducts.path(of: "usher"),
                ["--socket", daemon.socketPath, "watch"],
                stdout: .descriptor(output.writing.fileDescriptor)
            )
            try output.writing.close()
            defer { process.signal(SIGKILL) }
            // The watcher starts and subscribes in its own time: make things happen until it has printed something.
            let client = try daemon.connect()
            try await eventually {
                _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
                _ = try await client.result("logout")
                return printed.withLock { !$0.isEmpty }
            }
            // Subscribed now: it sees every event of a whole login and logout.
            let user = try #require(
                try await client.result("login", ["credentials": ["type": "anonymous"]])["user"]?["id"]?.stringValue
            )
            _ = try await client.result("logout")
            func printedLine(_ event: String) -> Bool {
                printed.withLock { $0.split(separator: "\n").contains { $0.contains(event) && $0.contains(user) } }
            }
            try await eventually { printedLine("user_logged_in") && printedLine("user_removed") }
            #expect(printedLine("active_user_changed"))
            client.close()
            // Stopping the daemon ends the watch with exit code 0, after it printed daemon_stopping.
            try await daemon.stop()
            #expect(try await process.exit() == 0)
            try await eventually { printed.withLock { $0.contains("daemon_stopping") } }
            output.reading.readabilityHandler = nil
        }
    }
}
