import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// What a person reads: tables that fit a terminal, users named as people name them, nothing from outside that can
/// drive the terminal, colour only where it belongs, and prompts instead of errors.
@Suite(.integrationHangGuard)
struct CLIOutputTests {
    static func usher(
        _ daemon: DaemonProcess?,
        _ arguments: [String],
        stdin: String = ""
    ) async throws -> ProcessOutput {
        try await CLITests.usher(daemon, arguments, stdin: stdin)
    }

    static let longEmail = "someone.with.a.rather.long.address@engineering.example.com"

    @Test func usersFitsEightyColumnsWhoFirst() async throws {
        try await DaemonProcess.with { daemon in
            try await CLIScriptingTests.logIn(daemon, Self.longEmail)
            try await CLIScriptingTests.logIn(daemon, "ann@example.com")
            #expect(try await Self.usher(daemon, ["logout", "ann@example.com"]).status == 0)
            #expect(try await Self.usher(daemon, ["login", "--anonymous"]).status == 0)
            let ids = try await daemon.connect().result("list_users")["users"]?.arrayValue?.compactMap {
                $0["id"]?.stringValue
            }
            let userIDs = try #require(ids)

            let users = try await Self.usher(daemon, ["users"])
            #expect(users.status == 0)
            let lines = users.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 4)
            #expect(lines.allSatisfy { $0.count <= 80 }, "\(users.stdout)")
            #expect(lines[0].split(separator: " ").prefix(3) == ["USER", "STATE", "TOKEN"], "\(lines[0])")
            #expect(lines[1].contains("someone.with.a.rather"))
            #expect(lines[1].contains("logged in"))
            #expect(lines[2].contains("ann@example.com") && lines[2].contains("logged out"))
            #expect(lines[3].hasPrefix("*"))
            // Ids only for who has nothing else to go by (the anonymous user).
            #expect(!lines[1].contains(userIDs[0]) && !lines[2].contains(userIDs[1]))
            // An id is shown whole, so that it can be copied into `usher switch` (issue 42, item 12).
            #expect(lines[3].contains(userIDs[2]), "\(lines[3])")
            #expect(try await Self.usher(daemon, ["switch", userIDs[2]]).status == 0)
            #expect(!users.stdout.contains("logged_in"))

            let long = try await Self.usher(daemon, ["users", "--long"])
            #expect(long.stdout.contains(Self.longEmail))
            for id in userIDs { #expect(long.stdout.contains(id)) }
            #expect(long.stdout.split(separator: "\n")[0].contains("PROVIDER"))

            let bare = try await Self.usher(daemon, ["users", "--no-headers"])
            #expect(bare.stdout.split(separator: "\n").count == 3)
            #expect(!bare.stdout.contains("USER"))
        }
    }

    /// The CLI's own messages and the daemon's errors it passes on name users by email, else name, else id (issue 42,
    /// item 12), and say what to run as a CLI command.
    @Test func messagesNameUsersAsPeopleDo() async throws {
        let directory = try TestDirectory()
        let hook = try AccountHooks.install(in: directory)
        let config =
            AccountHooks.config(hook: hook, extra: "[daemon]\ndefault_provider = \"plain\"\n")
            + "\n[providers.plain]\ntype = \"local\"\n"
        try await DaemonProcess.with(config: config) { daemon in
            try await CLIScriptingTests.logIn(daemon, "ann@example.com")
            let created = try await Self.usher(daemon, ["api-key", "create", "laptop"])
            #expect(created.stderr.contains("API key laptop of ann@example.com will not"), "\(created.stderr)")
            let deleted = try await Self.usher(daemon, ["api-key", "delete", "laptop"])
            #expect(deleted.stdout == "Deleted API key laptop of ann@example.com.\n", "\(deleted.stdout)")
            let none = try await Self.usher(daemon, ["api-key", "list"])
            #expect(none.stdout == "No API keys for ann@example.com.\n", "\(none.stdout)")
            // whoami names the email once.
            let whoami = try await Self.usher(daemon, ["whoami"])
            #expect(whoami.stdout.components(separatedBy: "ann@example.com").count == 2, "\(whoami.stdout)")

            // The daemon's errors, passed on: by email, not by id.
            #expect(try await Self.usher(daemon, ["logout"]).status == 0)
            for arguments in [["token", "--user", "ann@example.com"], ["switch", "ann@example.com"]] {
                let refused = try await Self.usher(daemon, arguments)
                #expect(refused.status == 4, "\(arguments)")
                #expect(refused.stderr.contains("user ann@example.com is logged out"), "\(refused.stderr)")
                #expect(!refused.stderr.contains("u_"), "\(refused.stderr)")
            }

            // An unconfirmed account: what to run is the CLI's command.
            let registered = try await Self.usher(
                daemon,
                ["register", "--provider", "local", "--email", "bob@example.com", "--password-stdin"],
                stdin: "secret one\n"
            )
            #expect(registered.status == 0, "\(registered.stderr)")
            let unconfirmed = try await Self.usher(
                daemon,
                ["login", "--provider", "local", "--email", "bob@example.com", "--password-stdin"],
                stdin: "secret one\n"
            )
            #expect(unconfirmed.stderr.contains("usher confirm"), "\(unconfirmed.stderr)")
            #expect(!unconfirmed.stderr.contains("confirm_user"), "\(unconfirmed.stderr)")
        }
    }

    @Test func statusIsAboutPeopleFirst() async throws {
        try await DaemonProcess.with { daemon in
            try await CLIScriptingTests.logIn(daemon, "ann@example.com")
            try await CLIScriptingTests.logIn(daemon, "joe@example.com")
            let status = try await Self.usher(daemon, ["status"])
            #expect(status.status == 0)
            let lines = status.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("active user") == true, "\(status.stdout)")
            #expect(lines.first?.hasSuffix("joe@example.com") == true, "\(status.stdout)")
            let loggedIn = try #require(lines.first { $0.hasPrefix("logged in") })
            #expect(loggedIn.contains("ann@example.com") && loggedIn.contains("joe@example.com"))
            let daemonLine = try #require(lines.firstIndex { $0.hasPrefix("daemon") })
            #expect(daemonLine > lines.firstIndex { $0.hasPrefix("logged in") }!)
            #expect(!status.stdout.contains("u_"), "users are named by email: \(status.stdout)")
        }
    }

    @Test func logoutRemoveAndWatchNameUsersByEmail() async throws {
        try await DaemonProcess.with { daemon in
            try await CLIScriptingTests.logIn(daemon, "joe@example.com")
            let watch = try BackgroundWatch(daemon)
            try await watch.waitUntilSubscribed()

            let logout = try await Self.usher(daemon, ["logout"])
            #expect(logout.stdout == "Logged out joe@example.com.\n", "\(logout.stdout)")
            let again = try await Self.usher(daemon, ["logout", "joe@example.com"])
            #expect(again.status == 0)
            #expect(again.stdout == "joe@example.com is already logged out.\n", "\(again.stdout)")
            #expect(!again.stdout.contains("did not confirm"))
            let removed = try await Self.usher(daemon, ["remove", "joe@example.com"])
            #expect(removed.stdout == "Removed joe@example.com.\n", "\(removed.stdout)")

            // joe's events name joe by email, not by id (the anonymous users of waitUntilSubscribed have no email).
            try await eventually { watch.lines.contains { $0.contains("user_removed") && $0.contains("joe@") } }
            for event in ["user_logged_out", "user_removed"] {
                let line = try #require(
                    watch.lines.first { $0.contains(event) && $0.contains("joe@example.com") },
                    "\(watch.lines)"
                )
                #expect(!line.contains("u_"), "\(line)")
            }
        }
    }

    @Test func textFromOutsideCannotDriveTheTerminal() async throws {
        try await DaemonProcess.with { daemon in
            // An email that reaches an error message, and an id that the daemon's message repeats.
            for reference in ["\u{1B}[2J\u{1B}]0;owned\u{07}@example.com", "u_\u{1B}[31mred\nsecond line"] {
                let result = try await Self.usher(daemon, ["switch", reference])
                #expect(result.status == 1)
                #expect(!result.stderr.contains("\u{1B}"), "\(result.stderr.debugDescription)")
                #expect(result.stderr.contains(#"\u001b"#), "\(result.stderr.debugDescription)")
                #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr.debugDescription)")
            }
        }
    }

    @Test func colourOnlyOnATerminalWithoutNoColor() async throws {
        try await DaemonProcess.with { daemon in
            try await CLIScriptingTests.logIn(daemon, "joe@example.com")
            let usher = try BuiltProducts.path(of: "usher")
            let environment = ["USHER_SOCKET": daemon.socketPath]

            let coloured = try TerminalSession(usher, ["users"], environment: environment)
            #expect(try await coloured.exitStatus() == 0)
            #expect(coloured.text.contains("\u{1B}[32mlogged in\u{1B}[0m"), "\(coloured.text.debugDescription)")

            var plain = environment
            plain["NO_COLOR"] = "1"
            let noColour = try TerminalSession(usher, ["users"], environment: plain)
            #expect(try await noColour.exitStatus() == 0)
            #expect(noColour.text.contains("logged in") && !noColour.text.contains("\u{1B}["))

            let json = try TerminalSession(usher, ["users", "--json"], environment: environment)
            #expect(try await json.exitStatus() == 0)
            #expect(json.text.contains("joe@example.com") && !json.text.contains("\u{1B}["))

            let piped = try await Self.usher(daemon, ["users"])
            #expect(piped.stdout.contains("logged in") && !piped.stdout.contains("\u{1B}"))
        }
    }

    @Test func loginWithoutAModeAsksForTheEmailOnATerminal() async throws {
        try await DaemonProcess.with { daemon in
            _ = try await Self.usher(
                daemon,
                ["register", "--email", "joe@example.com", "--password-stdin"],
                stdin: "secret-123\n"
            )
            let session = try TerminalSession(
                try BuiltProducts.path(of: "usher"),
                ["login"],
                environment: ["USHER_SOCKET": daemon.socketPath]
            )
            try await session.waitFor("Email: ")
            try session.type("joe@example.com\n")
            try await session.waitFor("Password for joe@example.com: ")
            try session.type("secret-123\n")
            #expect(try await session.exitStatus() == 0, "\(session.text)")
            #expect(session.text.contains("logged in"))
            #expect(!session.text.contains("secret-123"), "the password was echoed")

            // Without a terminal there is nobody to ask: the modes the provider accepts are named.
            let script = try await Self.usher(daemon, ["login"])
            #expect(script.status == 2)
            #expect(script.stderr.contains("--email") && script.stderr.contains("--api-key-stdin"), "\(script.stderr)")
            #expect(!script.stderr.contains("unsupported_credentials"))
        }
    }
}

/// `usher watch` running in the background, its lines collected.
final class BackgroundWatch {
    private let process: BackgroundProcess
    private let daemon: DaemonProcess

    init(_ daemon: DaemonProcess) throws {
        self.daemon = daemon
        self.process = try BackgroundProcess(
            try BuiltProducts.path(of: "usher"),
            ["--socket", daemon.socketPath, "watch"]
        )
    }

    var lines: [String] { self.process.stdout.split(separator: "\n").map(String.init) }

    /// Makes events happen until the watcher prints one: from then on it sees every event.
    func waitUntilSubscribed() async throws {
        let client = try self.daemon.connect()
        defer { client.close() }
        try await eventually {
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            _ = try await client.result("logout")
            return !self.lines.isEmpty
        }
        // The watcher's own user list is taken after it subscribed; the events above were the anonymous user's.
        _ = try await client.result("switch_user", ["user_id": .string(try await Self.firstLoggedIn(client))])
    }

    private static func firstLoggedIn(_ client: LineConnection) async throws -> String {
        let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
        return try #require(users.first { $0["state"] == "logged_in" }?["id"]?.stringValue)
    }
}
