import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// What scripts rely on: exit statuses that say whether someone is logged in, silent checks, fail-closed ways to use
/// a token, and a command line that takes its options where people put them.
@Suite(.integrationHangGuard)
struct CLIScriptingTests {
    static func usher(_ daemon: DaemonProcess?, _ arguments: [String], stdin: String = "") async throws -> ProcessOutput
    {
        try await CLITests.usher(daemon, arguments, stdin: stdin)
    }

    /// Logs a user in with an email and a password through the CLI.
    static func logIn(_ daemon: DaemonProcess, _ email: String) async throws {
        let registered = try await Self.usher(
            daemon,
            ["register", "--email", email, "--password-stdin"],
            stdin: "pw-\(email)\n"
        )
        #expect(registered.status == 0, "\(registered.stderr)")
        let login = try await Self.usher(
            daemon,
            ["login", "--email", email, "--password-stdin"],
            stdin: "pw-\(email)\n"
        )
        #expect(login.status == 0, "\(login.stderr)")
    }

    @Test func nobodyLoggedInHasItsOwnExitStatus() async throws {
        try await DaemonProcess.with { daemon in
            let whoami = try await Self.usher(daemon, ["whoami"])
            #expect(whoami.status == 4)
            #expect(whoami.stdout.isEmpty)
            #expect(whoami.stderr.contains("No user is logged in."))
            let quiet = try await Self.usher(daemon, ["whoami", "--quiet"])
            #expect(quiet.status == 4 && quiet.stdout.isEmpty && quiet.stderr.isEmpty)
            let check = try await Self.usher(daemon, ["status", "--check"])
            #expect(check.status == 4 && check.stdout.isEmpty && check.stderr.isEmpty)

            // `$(usher token)` is empty, and the status says why.
            for arguments in [["token"], ["token", "--header"], ["token", "--expires"]] {
                let token = try await Self.usher(daemon, arguments)
                #expect(token.status == 4, "\(arguments)")
                #expect(token.stdout.isEmpty)
                #expect(token.stderr.contains("no_active_user"))
            }

            try await Self.logIn(daemon, "joe@example.com")
            #expect(try await Self.usher(daemon, ["whoami", "-q"]).status == 0)
            #expect(try await Self.usher(daemon, ["whoami", "-q"]).stdout.isEmpty)
            #expect(try await Self.usher(daemon, ["status", "--check"]).status == 0)

            // A named user who is logged out: the same status.
            #expect(try await Self.usher(daemon, ["logout"]).status == 0)
            let loggedOut = try await Self.usher(daemon, ["token", "--user", "joe@example.com"])
            #expect(loggedOut.status == 4, "\(loggedOut.stderr)")
            #expect(loggedOut.stderr.contains("user_logged_out"))
            // Other errors keep 1.
            #expect(try await Self.usher(daemon, ["token", "--user", "u_nobody"]).status == 1)
        }
    }

    @Test func tokensComeAsAHeaderOrWithTheirExpiry() async throws {
        try await DaemonProcess.with { daemon in
            try await Self.logIn(daemon, "joe@example.com")
            let client = try daemon.connect()
            defer { client.close() }
            let expected = try await client.result("access_token")
            let token = try #require(expected["access_token"]?.stringValue)

            let header = try await Self.usher(daemon, ["token", "--header"])
            #expect(header.status == 0)
            #expect(header.stdout == "Authorization: Bearer \(token)\n")

            let expires = try await Self.usher(daemon, ["token", "--expires"])
            #expect(expires.status == 0)
            let expiresAt = try #require(expected["expires_at"]?.stringValue)
            #expect(expires.stdout == expiresAt + "\n")
            #expect(try await Self.usher(daemon, ["token", "--header", "--expires"]).status == 2)
        }
    }

    @Test func execRunsTheCommandWithTheTokenAndRefusesWithoutOne() async throws {
        try await DaemonProcess.with { daemon in
            let directory = try TestDirectory()
            defer { directory.remove() }
            let marker = directory.file("ran")
            let script = #"printf '%s %s' "$USHER_TOKEN" "$USHER_USER_ID"; : > "$1""#

            // No user: the command never starts.
            let refused = try await Self.usher(daemon, ["exec", "--", "/bin/sh", "-c", script, "sh", marker])
            #expect(refused.status == 4)
            #expect(refused.stdout.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: marker))

            try await Self.logIn(daemon, "joe@example.com")
            let client = try daemon.connect()
            defer { client.close() }
            let expected = try await client.result("access_token")
            let token = try #require(expected["access_token"]?.stringValue)
            let userID = try #require(expected["user_id"]?.stringValue)
            let ran = try await Self.usher(
                daemon,
                ["exec", "--user", "joe@example.com", "--min-valid", "1m", "--", "/bin/sh", "-c", script, "sh", marker]
            )
            #expect(ran.status == 0, "\(ran.stderr)")
            #expect(ran.stdout == "\(token) \(userID)")
            #expect(FileManager.default.fileExists(atPath: marker))

            // The command's own status comes back; options after -- belong to the command.
            let failing = try await Self.usher(daemon, ["exec", "--", "/bin/sh", "-c", "exit 7", "--json"])
            #expect(failing.status == 7)
            let renamed = try await Self.usher(
                daemon,
                ["exec", "--env", "API_TOKEN", "--", "/bin/sh", "-c", #"printf %s "$API_TOKEN""#]
            )
            #expect(renamed.stdout == token)
            let missing = try await Self.usher(daemon, ["exec", "--", "/nonexistent/program"])
            #expect(missing.status == 127)
            #expect(missing.stderr.contains("/nonexistent/program"))
            #expect(try await Self.usher(daemon, ["exec"]).status == 2)
        }
    }

    @Test func minValidTakesTheConfigurationsDurations() async throws {
        try await DaemonProcess.with { daemon in
            try await Self.logIn(daemon, "joe@example.com")
            for value in ["90", "90s", "10m", "1h", "2d", "500ms"] {
                let token = try await Self.usher(daemon, ["token", "--min-valid", value])
                #expect(token.status == 0, "\(value): \(token.stderr)")
            }
            for value in ["-5", "-10m"] {
                let negative = try await Self.usher(daemon, ["token", "--min-valid", value])
                #expect(negative.status == 2)
                #expect(negative.stderr.contains("must not be negative"), "\(negative.stderr)")
            }
            let nonsense = try await Self.usher(daemon, ["token", "--min-valid", "soon"])
            #expect(nonsense.status == 2)
            #expect(nonsense.stderr.contains("90s, 10m"), "\(nonsense.stderr)")
        }
    }

    @Test func globalOptionsGoAnywhereAndAreInTheHelp() async throws {
        try await DaemonProcess.with { daemon in
            try await Self.logIn(daemon, "joe@example.com")
            _ = try await Self.usher(daemon, ["api-key", "create", "laptop"])
            // No USHER_SOCKET: --socket alone finds the daemon, wherever it is on the line.
            for arguments in [
                ["--socket", daemon.socketPath, "api-key", "list", "--json"],
                ["api-key", "--socket", daemon.socketPath, "list", "--json"],
                ["api-key", "list", "--socket", daemon.socketPath, "--json"],
                ["api-key", "list", "--json", "--socket=\(daemon.socketPath)"],
            ] {
                let listed = try await Self.usher(nil, arguments)
                #expect(listed.status == 0, "\(arguments): \(listed.stderr)")
                let json = try JSONDecoder().decode(JSONValue.self, from: Data(listed.stdout.utf8))
                #expect(json["api_keys"]?.arrayValue?.first?["name"] == "laptop", "\(arguments): \(listed.stdout)")
            }
            let users = try await Self.usher(daemon, ["users", "--json"])
            #expect(try JSONDecoder().decode(JSONValue.self, from: Data(users.stdout.utf8))["users"] != nil)
        }
        let help = try await Self.usher(nil, ["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--socket <path>"))
        #expect(help.stdout.contains("--json"))
        #expect(help.stdout.contains("--version"))
        let version = try await Self.usher(nil, ["--version"])
        #expect(version.status == 0)
        #expect(!version.stdout.isEmpty && version.stdout.hasSuffix("\n"))
    }

    /// Every subcommand's usage names it as it is typed: `usher link`, not `usher login link` (issue 42, item 16), even
    /// where one command takes another's options.
    @Test func usageLinesNameTheCommandAsTyped() async throws {
        for command in ["link", "login", "unlink", "token", "delete"] {
            let help = try await Self.usher(nil, [command, "--help"])
            #expect(help.status == 0, "\(command): \(help.stderr)")
            #expect(help.stdout.contains("USAGE: usher \(command) "), "\(command): \(help.stdout)")
        }
        let wrong = try await Self.usher(nil, ["link", "--no-such-option"])
        #expect(wrong.status == 2)
        #expect(wrong.stderr.contains("See 'usher link --help'"), "\(wrong.stderr)")
    }

    @Test func typosGetASuggestionAndAliasesWork() async throws {
        let typo = try await Self.usher(nil, ["logni"])
        #expect(typo.status == 2)
        #expect(typo.stderr.contains("Did you mean 'login'?"), "\(typo.stderr)")
        let nested = try await Self.usher(nil, ["api-key", "lsit"])
        #expect(nested.status == 2)
        #expect(nested.stderr.contains("Did you mean 'list'?"), "\(nested.stderr)")
        let unknown = try await Self.usher(nil, ["frobnicate"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("the commands are:"), "\(unknown.stderr)")

        // `api-key` alone: its usage, naming its subcommands.
        let apiKey = try await Self.usher(nil, ["api-key"])
        #expect(apiKey.status == 2)
        #expect(apiKey.stderr.contains("usher api-key <subcommand>"), "\(apiKey.stderr)")
        #expect(apiKey.stderr.contains("create") && apiKey.stderr.contains("list"))

        try await DaemonProcess.with { daemon in
            try await Self.logIn(daemon, "joe@example.com")
            let current = try await Self.usher(daemon, ["current"])
            #expect(current.status == 0)
            #expect(current.stdout.hasPrefix("user          joe@example.com\n"), "\(current.stdout)")
            // The same answer as whoami (--json: the text has relative times, which move on between two runs).
            let currentJSON = try await Self.usher(daemon, ["current", "--json"])
            #expect(currentJSON.stdout == (try await Self.usher(daemon, ["whoami", "--json"])).stdout)
            let ls = try await Self.usher(daemon, ["ls"])
            #expect(ls.status == 0)
            #expect(ls.stdout.contains("joe@example.com"))
        }
    }

    @Test func theDaemonsLogLineSeparatesTheLevelFromTheMessage() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        // A state directory that cannot be created (its parent is a file): usherd logs a critical record and exits.
        try directory.write("file", "")
        let result = try await runProcess(
            try BuiltProducts.path(of: "usherd"),
            ["--socket", directory.file("usher.sock"), "--state-directory", directory.file("file/state")]
        )
        #expect(result.status != 0)
        #expect(result.stderr.contains("critical usherd could not start"), "\(result.stderr)")
        #expect(!result.stderr.contains("criticalusherd"))
    }

    /// `make run` ends with the line to paste into another shell, as `ssh-agent -s` does, and the daemon it starts
    /// listens where that line points. (A stand-in usherd prints its arguments: no daemon, no build.)
    @Test func makeRunEndsWithTheExportLineToPaste() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.file("bin"), withIntermediateDirectories: true)
        try directory.writeExecutable("bin/usherd", "#!/bin/sh\necho \"usherd $*\"\n")
        let root = DocumentationTests.root.path
        let run = try await runProcess(
            "/usr/bin/make",
            [
                "--no-print-directory", "-s", "-C", root, "-o", "build", "run", "RUN_DIR=" + directory.file("run"),
                "BIN=" + directory.file("bin"),
            ]
        )
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        let socket = directory.file("run/usher.sock")
        let export = try #require(lines.first { $0.hasPrefix("export USHER_SOCKET=") }, "\(run.stdout)")
        #expect(export == "export USHER_SOCKET=\(socket) PATH=\(directory.file("bin")):$PATH")
        // The last thing printed before the daemon starts (and its log follows).
        #expect(lines.last { !$0.isEmpty && !$0.hasPrefix("usherd ") } == export)
        #expect(lines.last?.contains("--socket \(socket)") == true, "\(run.stdout)")
    }
}
