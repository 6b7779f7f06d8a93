import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// usher as git's credential helper, with the real `git` against a real smart-HTTP git server (`git http-backend`
/// behind Tests/Fixtures/git-server/server.py) that accepts only tokens usherd issued (issue 23).
@Suite(.integrationHangGuard)
struct GitCredentialTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/token-servers/git_server.py").path

    /// The git server, its repository, and an environment for git and usher that touches nothing of the machine's
    /// own git configuration.
    struct Setup {
        var directory: TestDirectory
        var server: BackgroundProcess
        var url: String
        var environment: [String: String]

        func git(_ arguments: [String], in directory: String? = nil) async throws -> ProcessOutput {
            let cd = directory.map { ["-C", $0] } ?? []
            return try await runProcess("/usr/bin/git", cd + arguments, environment: self.environment)
        }

        func usher(_ arguments: [String], stdin: String = "") async throws -> ProcessOutput {
            try await runProcess(
                try BuiltProducts.path(of: "usher"),
                arguments,
                stdin: stdin,
                environment: self.environment
            )
        }

        /// The helpers git's global configuration has for the server's URL (what setup-git recorded), one a line.
        func recordedHelpers() async throws -> String {
            try await self.git(["config", "--global", "--get-all", "credential.\(self.url).helper"]).stdout
        }

        /// The pushes the server accepted, by whom.
        var pushes: [String] {
            self.server.stderr.split(separator: "\n").filter { $0.hasPrefix("push by ") }.map {
                String($0.dropFirst("push by ".count))
            }
        }
    }

    static func setUp(_ daemon: DaemonProcess) async throws -> Setup {
        let directory = try TestDirectory()
        let client = try daemon.connect()
        let jwks = try await client.result("jwks")
        let encoder = JSONEncoder()
        try directory.write("jwks.json", String(decoding: try encoder.encode(jwks), as: UTF8.self))
        let root = directory.file("repositories")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let bare = try await runProcess("/usr/bin/git", ["init", "--quiet", "--bare", "\(root)/project.git"])
        #expect(bare.status == 0, "\(bare.stderr)")
        _ = try await runProcess("/usr/bin/git", ["-C", "\(root)/project.git", "config", "http.receivepack", "true"])
        let server = try BackgroundProcess(
            TestPython.executable,
            [Self.fixture, root, directory.file("jwks.json")]
        )
        let listening = try await server.stderrLine(within: .seconds(90)) { $0.hasPrefix("listening on ") }
        let base = String(listening.dropFirst("listening on ".count))
        let usher = URL(fileURLWithPath: try BuiltProducts.path(of: "usher")).deletingLastPathComponent().path
        let environment = [
            "PATH": "\(usher):/usr/bin:/bin",
            "HOME": directory.path,
            "GIT_CONFIG_GLOBAL": directory.file("gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "Tester", "GIT_AUTHOR_EMAIL": "tester@example.com",
            "GIT_COMMITTER_NAME": "Tester", "GIT_COMMITTER_EMAIL": "tester@example.com",
            "USHER_SOCKET": daemon.socketPath,
        ]
        return Setup(directory: directory, server: server, url: base, environment: environment)
    }

    static func logIn(_ client: LineConnection, _ email: String) async throws -> String {
        _ = try await client.result("register", ["email": .string(email), "password": "secret one"])
        let login = try await client.result(
            "login",
            ["credentials": ["type": "email_password", "email": .string(email), "password": "secret one"]]
        )
        return try #require(login["user"]?["id"]?.stringValue)
    }

    @Test func gitClonesAndPushesAsTheActiveUserAndFailsClosedWithNobody() async throws {
        try await DaemonProcess.with { daemon in
            let setup = try await Self.setUp(daemon)
            defer { setup.directory.remove() }
            let client = try daemon.connect()
            _ = try await Self.logIn(client, "bob@example.com")
            let annID = try await Self.logIn(client, "ann@example.com")

            // Without a helper, the server refuses git, and git does not prompt.
            let refused = try await setup.git([
                "clone", "--quiet", "\(setup.url)/project.git", setup.directory.file("a"),
            ])
            #expect(refused.status != 0)

            let configured = try await setup.usher(["setup-git", "--host", setup.url])
            #expect(configured.status == 0, "\(configured.stderr)")
            let config = try await setup.recordedHelpers()
            #expect(config.contains("git-credential"), "\(config)")

            let work = setup.directory.file("work")
            let clone = try await setup.git(["clone", "--quiet", "\(setup.url)/project.git", work])
            #expect(clone.status == 0, "\(clone.stderr)")
            try "one\n".write(toFile: "\(work)/file", atomically: true, encoding: .utf8)
            _ = try await setup.git(["add", "file"], in: work)
            _ = try await setup.git(["commit", "--quiet", "-m", "one"], in: work)
            let push = try await setup.git(["push", "--quiet", "origin", "HEAD:main"], in: work)
            #expect(push.status == 0, "\(push.stderr)")
            #expect(setup.pushes == ["ann@example.com"])

            // Switching the active user changes who pushes.
            let bob = try #require(
                try await client.result("list_users")["users"]?.arrayValue?.first { $0["email"] == "bob@example.com" }
            )
            _ = try await client.result("switch_user", ["user_id": bob["id"]!])
            try "two\n".write(toFile: "\(work)/file", atomically: true, encoding: .utf8)
            _ = try await setup.git(["commit", "--quiet", "-am", "two"], in: work)
            let second = try await setup.git(["push", "--quiet", "origin", "HEAD:main"], in: work)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(setup.pushes == ["ann@example.com", "bob@example.com"])

            // Nobody logged in: the helper answers nothing, git fails without a prompt, and usher says why.
            _ = try await client.result("logout")
            _ = try await client.result("logout", ["user_id": .string(annID)])
            try "three\n".write(toFile: "\(work)/file", atomically: true, encoding: .utf8)
            _ = try await setup.git(["commit", "--quiet", "-am", "three"], in: work)
            let closed = try await setup.git(["push", "--quiet", "origin", "HEAD:main"], in: work)
            #expect(closed.status != 0)
            #expect(closed.stderr.contains("usher: no token for git"), "\(closed.stderr)")
            #expect(setup.pushes.count == 2)
        }
    }

    @Test func aRefusedTokenIsErasedAndTheNextAttemptGetsANewOne() async throws {
        try await DaemonProcess.with { daemon in
            let setup = try await Self.setUp(daemon)
            defer { setup.directory.remove() }
            let client = try daemon.connect()
            _ = try await Self.logIn(client, "ann@example.com")
            // For this host, always Ann's token, with the user name the host wants.
            let configured = try await setup.usher([
                "setup-git", "--host", setup.url, "--user", "ann@example.com", "--username", "x-access-token",
            ])
            #expect(configured.status == 0, "\(configured.stderr)")
            let host = String(setup.url.dropFirst("http://".count))
            let answer = try await setup.usher(
                ["git-credential", "--host", host, "--user", "ann@example.com", "--username", "x-access-token", "get"],
                stdin: "protocol=http\nhost=\(host)\n\n"
            )
            #expect(answer.stdout.hasPrefix("username=x-access-token\npassword=ey"), "\(answer.stdout)")
            #expect(answer.stdout.contains("password_expiry_utc="))
            let token = try #require(
                answer.stdout.split(separator: "\n").first { $0.hasPrefix("password=") }?.dropFirst("password=".count)
            )

            // The server revokes that token (by its jti): git's request fails, and git erases the credential.
            let jti = try #require(try JWTPayload.claims(of: String(token))["jti"]?.stringValue)
            try setup.directory.write("repositories/revoked", jti + "\n")
            let work = setup.directory.file("work")
            let failed = try await setup.git(["clone", "--quiet", "\(setup.url)/project.git", work])
            #expect(failed.status != 0)
            // The erase refreshed the token: the next attempt gets a new one, which the server accepts.
            let now = try await setup.usher(["token", "--user", "ann@example.com"])
            #expect(now.stdout.trimmingCharacters(in: .whitespacesAndNewlines) != String(token))
            let retried = try await setup.git(["clone", "--quiet", "\(setup.url)/project.git", work])
            #expect(retried.status == 0, "\(retried.stderr)")
        }
    }

    /// `git credential fill` for `url` (real git, which runs the configured helpers): the helper's answer and stderr.
    static func fill(_ setup: Setup, _ url: String, _ options: [String] = []) async throws -> ProcessOutput {
        let parts = url.split(separator: "/", omittingEmptySubsequences: true)
        let scheme = String(parts[0].dropLast())
        let host = String(parts[1])
        return try await runProcess(
            "/usr/bin/git",
            options + ["credential", "fill"],
            stdin: "protocol=\(scheme)\nhost=\(host)\n\n",
            environment: setup.environment
        )
    }

    /// Issue 36 item 5: with usher as git's helper for every URL (`credential.helper`, as the docs showed), git asked
    /// it for a plain http server's credentials and sent the token there in clear text. The helper answers only for
    /// the hosts it was given, and only over https (http to loopback alone), and says why it answered nothing.
    @Test func theHelperAnswersOnlyForItsHostsAndNeverOverPlainHTTP() async throws {
        try await DaemonProcess.with { daemon in
            let setup = try await Self.setUp(daemon)
            defer { setup.directory.remove() }
            let client = try daemon.connect()
            _ = try await Self.logIn(client, "ann@example.com")
            let usher = try BuiltProducts.path(of: "usher")
            // usher for every URL, as credential.helper = usher does.
            _ = try await setup.git(["config", "--global", "credential.helper", "!\(usher) git-credential"])

            for url in ["http://git.example.com", "https://git.example.com", "https://evil.example.org"] {
                let answer = try await Self.fill(setup, url)
                #expect(!answer.stdout.contains("password="), "\(url): \(answer.stdout)")
                #expect(answer.stderr.contains("usher: no token for git:"), "\(url): \(answer.stderr)")
            }
            let plain = try await Self.fill(setup, "http://git.example.com")
            #expect(plain.stderr.contains("plain http"), "\(plain.stderr)")

            // Hosts named in git's usher.host settings: https only, never plain http to them.
            let named = ["-c", "usher.host=git.example.com"]
            let https = try await Self.fill(setup, "https://git.example.com", named)
            #expect(https.stdout.contains("password=ey"), "\(https.stdout) \(https.stderr)")
            #expect(!(try await Self.fill(setup, "http://git.example.com", named)).stdout.contains("password="))
            #expect(!(try await Self.fill(setup, "https://git.example.com:8443", named)).stdout.contains("password="))
            #expect(!(try await Self.fill(setup, "https://evil.example.org", named)).stdout.contains("password="))

            // setup-git records its host in the helper: that host alone, and http only because it is loopback.
            _ = try await setup.git(["config", "--global", "--unset-all", "credential.helper"])
            let configured = try await setup.usher(["setup-git", "--host", setup.url])
            #expect(configured.status == 0, "\(configured.stderr)")
            let helper = try await setup.recordedHelpers()
            let host = String(setup.url.dropFirst("http://".count))
            #expect(helper.contains("git-credential --host \(host)"), "\(helper)")
            #expect(try await Self.fill(setup, setup.url).stdout.contains("password=ey"))
            let refusedPlain = try await setup.usher(["setup-git", "--host", "http://git.example.com"])
            #expect(refusedPlain.status == 2, "\(refusedPlain.stderr)")
            #expect(refusedPlain.stderr.contains("https"), "\(refusedPlain.stderr)")
        }
    }

    /// Issues 36 item 8 and 42 item 10: usher run through a symbolic link named `usher` to the one program (as the
    /// package can install it, as busybox's applets are) records a command that runs the CLI, not `usherd`'s path
    /// (which git would have started the daemon by); the installed usher when it is this program; and says when the
    /// path is a build directory's.
    @Test func setupRecordsACommandThatRunsTheCLIAndOutlivesTheBuild() async throws {
        try await DaemonProcess.with { daemon in
            let setup = try await Self.setUp(daemon)
            defer { setup.directory.remove() }
            let client = try daemon.connect()
            _ = try await Self.logIn(client, "ann@example.com")
            let usherd = try BuiltProducts.path(of: "usherd")
            let links = setup.directory.file("links")
            try FileManager.default.createDirectory(atPath: links, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: "\(links)/usher", withDestinationPath: usherd)
            // usher run by the link, with `path` as PATH.
            func runLink(_ arguments: [String], path: String) async throws -> ProcessOutput {
                var environment = setup.environment
                environment["PATH"] = path
                return try await runProcess("\(links)/usher", arguments, environment: environment)
            }

            // No usher on PATH: the link itself, with a warning that it is not an installed usher.
            let configured = try await runLink(["setup-git", "--host", setup.url], path: "/usr/bin:/bin")
            #expect(configured.status == 0, "\(configured.stderr)")
            #expect(configured.stderr.contains("warning"), "\(configured.stderr)")
            #expect(configured.stderr.contains("build directory"), "\(configured.stderr)")
            let helper = try await setup.recordedHelpers()
            #expect(helper.contains("!\(links)/usher git-credential"), "\(helper)")
            #expect(!helper.contains("usherd"), "\(helper)")
            // And git's helper is the CLI: it answers.
            #expect(try await Self.fill(setup, setup.url).stdout.contains("password=ey"))

            // An installed usher on PATH that is this program (a copy of it): that one, and no warning.
            let bin = setup.directory.file("bin")
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            try ExecutableFile.copy(usherd, to: "\(bin)/usher")
            let installed = try await runLink(["setup-git", "--host", setup.url], path: "\(bin):/usr/bin:/bin")
            #expect(installed.status == 0, "\(installed.stderr)")
            #expect(!installed.stderr.contains("warning"), "\(installed.stderr)")
            let recorded = try await setup.recordedHelpers()
            #expect(recorded.contains("!\(bin)/usher git-credential"), "\(recorded)")
            #expect(try await Self.fill(setup, setup.url).stdout.contains("password=ey"))

            // setup-kube records the same command.
            let kubeconfig = setup.directory.file("kubeconfig")
            try """
            apiVersion: v1
            kind: Config
            clusters:
            - name: c
              cluster:
                server: https://127.0.0.1:6443
            contexts:
            - name: c
              context:
                cluster: c
            users: []

            """.write(toFile: kubeconfig, atomically: true, encoding: .utf8)
            let kube = try await runLink(
                ["setup-kube", "--context", "c", "--kubeconfig", kubeconfig],
                path: "/usr/bin:/bin"
            )
            #expect(kube.status == 0, "\(kube.stderr)")
            #expect(kube.stderr.contains("warning"), "\(kube.stderr)")
            let written = try String(contentsOfFile: kubeconfig, encoding: .utf8)
            #expect(written.contains("command: \(links)/usher\n"), "\(written)")
        }
    }
}
