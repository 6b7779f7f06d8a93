import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The `usher` CLI starts fast: it does not link Foundation (nor ICU, which Foundation brings), whose loading and
/// start-up were most of `usher token`'s wall time. The time itself is measured by `make bench`, never asserted here;
/// these tests pin what makes it fast, and the output of the code paths rewritten without Foundation.
@Suite(.integrationHangGuard)
struct CLIStartupTests {
    /// The built CLI, and what the tools that look at it print.
    static func usher() throws -> String { try BuiltProducts.path(of: "usher") }

    /// The CLI's code and the libraries it links: the `usher` product, the CLI alone. The package's `usher` is usherd
    /// under another name, whose release build tools/check-no-foundation.sh and the boot test check; a debug usherd
    /// loads Foundation dynamically (a dependency of the daemon imports it; the release link keeps none of it).
    @Test func theCLILinksNeitherFoundationNorICU() async throws {
        let usher = try BuiltProducts.product("usher")
        // Dynamically linked (a debug build): the libraries the loader would map.
        let libraries = try await runProcess("/usr/bin/ldd", [usher])
        #expect(libraries.status == 0 || libraries.stderr.contains("not a dynamic executable"), "\(libraries.stderr)")
        for library in ["libFoundation.so", "libFoundationInternationalization", "lib_FoundationICU"] {
            #expect(!libraries.stdout.contains(library), "usher links \(library):\n\(libraries.stdout)")
        }
        // Statically linked (`--static-swift-stdlib`), nothing shows in ldd: no Swift symbol of Foundation or of
        // FoundationInternationalization may be in the binary either, defined or referenced. Mangled Swift names
        // spell a module as its length and name; FoundationEssentials (`20FoundationEssentials`) is allowed.
        let symbols = try await runProcess("/usr/bin/nm", [usher])
        #expect(symbols.status == 0, "\(symbols.stderr)")
        #expect(!symbols.stdout.isEmpty)
        for module in ["10Foundation", "30FoundationInternationalization"] {
            let uses = symbols.stdout.split(separator: "\n").filter { Self.names($0, module: module) }
            #expect(
                uses.isEmpty,
                "usher uses \(module.drop { $0.isNumber }): \(uses.prefix(5).joined(separator: "\n"))"
            )
        }
    }

    /// Whether an `nm` line names a Swift symbol of `module`, given mangled (`10Foundation`): the mangled name not
    /// preceded by another digit, which would make it part of a longer length.
    static func names(_ line: Substring, module: String) -> Bool {
        var rest = line[...]
        while let found = rest.firstRange(of: module) {
            guard found.lowerBound > line.startIndex, line[line.index(before: found.lowerBound)].isNumber else {
                return true
            }
            rest = line[found.upperBound...]
        }
        return false
    }

    /// `refresh` prints the new expiry in local time, `YYYY-MM-DD HH:MM:SS`, with how far off it is; `whoami` the
    /// state with spaces. Both were formatted by Foundation before.
    @Test func timesAndStatesReadAsBefore() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            defer { client.close() }
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            var environment = ProcessInfo.processInfo.environment
            environment["USHER_SOCKET"] = daemon.socketPath
            // UTC, so that local time can be checked against the daemon's RFC 3339 timestamps.
            environment["TZ"] = "UTC"

            let refresh = try await runProcess(try Self.usher(), ["refresh"], environment: environment)
            #expect(refresh.status == 0, "\(refresh.stderr)")
            let expiresAt = try #require(
                try await client.result("current_user")["user"]?["access_token_expires_at"]?.stringValue
            )
            // 2026-11-22T19:15:50Z (maybe with a fraction) reads 2026-11-22 19:15:50.
            let local = expiresAt.prefix(19).replacingOccurrences(of: "T", with: " ")
            let line = refresh.stdout.trimmingCharacters(in: .newlines)
            #expect(line.hasPrefix("Refreshed the access token of u_"), "\(line)")
            #expect(line.contains("; it expires \(local) (in "), "\(line) does not name \(local)")
            #expect(line.hasSuffix("s).") || line.hasSuffix("m).") || line.hasSuffix("h)."), "\(line)")

            let whoami = try await runProcess(try Self.usher(), ["whoami"], environment: environment)
            let state = whoami.stdout.split(separator: "\n").first { $0.hasPrefix("state ") }
            #expect(state.map { $0.hasSuffix("  logged in") } == true, "\(whoami.stdout)")
        }
    }

    /// `token` talks to the daemon without `UsherClient`'s event loop: it answers as every other command does, by
    /// email, with `--json`, and with the same errors and exit codes.
    @Test func tokenAnswersAsBefore() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            defer { client.close() }
            var environment = ProcessInfo.processInfo.environment
            environment["USHER_SOCKET"] = daemon.socketPath
            func usher(_ arguments: [String]) async throws -> ProcessOutput {
                try await runProcess(try Self.usher(), arguments, environment: environment)
            }

            // 4: nobody is logged in (issue 13).
            let none = try await usher(["token"])
            #expect(none.status == 4)
            #expect(none.stdout.isEmpty)
            #expect(none.stderr.hasPrefix("usher: ") && none.stderr.hasSuffix(" (no_active_user)\n"), "\(none.stderr)")

            let first = try #require(
                try await client.result("login", ["credentials": ["type": "anonymous"]])["user"]?["id"]?.stringValue
            )
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let token = try await usher(["token", "--user", first, "--min-valid", "60"])
            #expect(token.status == 0, "\(token.stderr)")
            let direct = try await client.result("access_token", ["user_id": .string(first)])
            #expect(token.stdout == (direct["access_token"]?.stringValue ?? "?") + "\n")

            // --json prints the result as the daemon sent it, keys sorted.
            let json = try await usher(["--json", "token", "--user", first])
            let result = try JSONDecoder().decode(JSONValue.self, from: Data(json.stdout.utf8))
            #expect(result["access_token"] == direct["access_token"])
            #expect(json.stdout.hasSuffix("}\n") && json.stdout.split(separator: "\n").count == 1)

            // An email is looked up among the users; anonymous users have none.
            let byEmail = try await usher(["token", "--user", "nobody@example.com"])
            #expect(byEmail.status == 1)
            #expect(byEmail.stderr == "usher: no user with the email nobody@example.com (user_not_found)\n")
        }
        // Unreachable: the same message as any other command, exit 3.
        for socket in ["/tmp/usher-startup-nothing-here.sock", "/tmp/" + String(repeating: "x", count: 120)] {
            let token = try await runProcess(try Self.usher(), ["token", "--socket", socket])
            let status = try await runProcess(try Self.usher(), ["status", "--socket", socket])
            #expect(token.status == 3)
            #expect(token.stderr == status.stderr)
            #expect(token.stderr.contains(socket))
        }
    }

    /// The socket is looked for as before, now through `getenv` and `stat`: `$USHER_SOCKET`, then (not for root)
    /// `$XDG_RUNTIME_DIR/usher/usher.sock` when something is there, then `/run/usher/usher.sock`; the error names
    /// what was looked at. Run as `nobody` (with `setpriv`), since root skips the per-user location.
    @Test(
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
                && !FileManager.default.fileExists(atPath: "/run/usher/usher.sock"),
            "needs root, /usr/bin/setpriv, and no daemon at /run/usher/usher.sock"
        )
    )
    func theSocketIsFoundWhereItWasBefore() async throws {
        let systemSocket = "/run/usher/usher.sock"
        let runtime = try TestDirectory()
        defer { runtime.remove() }
        #expect(chmod(runtime.path, 0o755) == 0)
        func usher(asRoot: Bool = false, _ environment: [String: String]) async throws -> ProcessOutput {
            let command = asRoot ? [] : ["--reuid=65534", "--regid=65534", "--clear-groups", try Self.usher()]
            return try await runProcess(
                asRoot ? try Self.usher() : "/usr/bin/setpriv",
                command + ["token"],
                environment: environment.merging(["PATH": "/usr/bin:/bin"]) { set, _ in set }
            )
        }
        let perUser = runtime.path + "/usher/usher.sock"

        // Nothing in the runtime directory: the system socket, and the error says what else was looked at.
        var missing = try await usher(["XDG_RUNTIME_DIR": runtime.path + "/"])
        #expect(missing.status == 3)
        #expect(
            missing.stderr
                == "usher: cannot reach usherd at \(systemSocket): no such file (also looked for \(perUser): "
                + "not found; set --socket or USHER_SOCKET)\n"
        )
        // Something there (not a socket): it is chosen.
        #expect(mkdir(runtime.path + "/usher", 0o755) == 0)
        try runtime.write("usher/usher.sock", "")
        #expect(chmod(perUser, 0o666) == 0)
        missing = try await usher(["XDG_RUNTIME_DIR": runtime.path])
        #expect(missing.status == 3)
        #expect(
            missing.stderr
                == "usher: cannot reach usherd at \(perUser): connection refused (set --socket or USHER_SOCKET)\n"
        )
        // USHER_SOCKET wins; root never looks in XDG_RUNTIME_DIR.
        missing = try await usher(["XDG_RUNTIME_DIR": runtime.path, "USHER_SOCKET": runtime.path + "/other.sock"])
        #expect(missing.stderr.contains("at \(runtime.path)/other.sock: no such file (from USHER_SOCKET)"))
        missing = try await usher(asRoot: true, ["XDG_RUNTIME_DIR": runtime.path])
        #expect(
            missing.stderr
                == "usher: cannot reach usherd at \(systemSocket): no such file (set --socket or USHER_SOCKET)\n"
        )
    }

    /// `watch --events` takes names with spaces around them; an unknown name is a usage error (2). Valid names get as
    /// far as connecting (3: nothing listens there).
    @Test func watchEventNamesAreTrimmed() async throws {
        let socket = "/tmp/usher-startup-nothing-here.sock"
        let valid = try await runProcess(
            try Self.usher(),
            [
                "watch", "--socket", socket, "--events", " user_logged_in ,\tuser_removed", "--events",
                "daemon_stopping ",
            ]
        )
        #expect(valid.status == 3, "\(valid.stderr)")
        let unknown = try await runProcess(try Self.usher(), ["watch", "--socket", socket, "--events", "user_logged,"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains(#"Unknown event "user_logged""#), "\(unknown.stderr)")
    }
}
