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
            let config = try await setup.git(["config", "--global", "--get-all", "credential.\(setup.url).helper"])
            #expect(config.stdout.contains("git-credential"), "\(config.stdout)")

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
            let answer = try await setup.usher(
                ["git-credential", "--user", "ann@example.com", "--username", "x-access-token", "get"],
                stdin: "protocol=http\nhost=127.0.0.1\n\n"
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
}
