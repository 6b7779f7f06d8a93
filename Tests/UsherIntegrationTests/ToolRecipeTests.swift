import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The recipes of docs/integrations.md for tools that run a command to get a password or token, each run with the
/// real tool against a local server that accepts only tokens usherd issued, and each failing closed when nobody is
/// logged in (issue 23).
@Suite(.integrationHangGuard)
struct ToolRecipeTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/token-servers").path

    /// A daemon with Kim logged in, a directory with usherd's JWK set, and the environment the recipes run in.
    struct Bench {
        var daemon: DaemonProcess
        var client: LineConnection
        var directory: TestDirectory
        var environment: [String: String]

        func bash(_ script: String, stdin: String = "") async throws -> ProcessOutput {
            try await runProcess(
                "/bin/bash",
                ["-c", "set -euo pipefail\n" + script],
                stdin: stdin,
                environment: self.environment
            )
        }

        func server(_ name: String) throws -> BackgroundProcess {
            try BackgroundProcess(
                TestPython.executable,
                ["\(ToolRecipeTests.fixtures)/\(name)", self.directory.path, self.directory.file("jwks.json")]
            )
        }
    }

    static func withBench(_ body: (Bench) async throws -> Void) async throws {
        try await DaemonProcess.with { daemon in
            let directory = try TestDirectory()
            defer { directory.remove() }
            let client = try daemon.connect()
            let jwks = try await client.result("jwks")
            try directory.write("jwks.json", String(decoding: try JSONEncoder().encode(jwks), as: UTF8.self))
            _ = try await client.result("register", ["email": "kim@example.com", "password": "secret one"])
            _ = try await client.result(
                "login",
                ["credentials": ["type": "email_password", "email": "kim@example.com", "password": "secret one"]]
            )
            let usher = URL(fileURLWithPath: try BuiltProducts.path(of: "usher")).deletingLastPathComponent().path
            let environment = [
                "PATH": "\(usher):/usr/bin:/bin", "HOME": directory.path, "USHER_SOCKET": daemon.socketPath,
                "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": directory.file("gitconfig"),
            ]
            try await body(Bench(daemon: daemon, client: client, directory: directory, environment: environment))
        }
    }

    @Test func curlSendsTheTokenAndIsNotRunWithoutOne() async throws {
        try await Self.withBench { bench in
            let server = try bench.server("kube_server.py")
            let url = String(
                try await server.stderrLine(within: .seconds(90)) { $0.hasPrefix("listening on ") }.dropFirst(13)
            )
            let recipe = """
                token=$(usher token --user kim@example.com --min-valid 5m)
                curl --silent --fail --cacert \(bench.directory.file("ca.pem")) --oauth2-bearer "$token" \(url)/api
                """
            let sent = try await bench.bash(recipe)
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(sent.stdout.contains("APIVersions"))
            let header = try await bench.bash(
                "usher token --header | curl --silent --fail --cacert \(bench.directory.file("ca.pem")) -H @- \(url)/api"
            )
            #expect(header.status == 0, "\(header.stderr)")
            #expect(server.stderr.components(separatedBy: "request by kim@example.com /api").count == 3)

            _ = try await bench.client.result("logout")
            let closed = try await bench.bash(recipe)
            #expect(closed.status == 4, "\(closed.stderr)")
            #expect(closed.stdout.isEmpty)
            // curl never ran: the server saw no request without a token.
            #expect(!server.stderr.contains("\"GET /api HTTP/1.1\" 401"), "\(server.stderr)")
        }
    }

    @Test func msmtpAuthenticatesWithXOAUTH2AndSendsNothingWithoutAToken() async throws {
        try await Self.withBench { bench in
            let server = try bench.server("smtp_server.py")
            let port = String(
                try await server.stderrLine(within: .seconds(90)) { $0.hasPrefix("listening on ") }.dropFirst(13)
            )
            let rc = bench.directory.file("msmtprc")
            try bench.directory.write(
                "msmtprc",
                """
                account default
                host 127.0.0.1
                port \(port)
                from kim@example.com
                user kim@example.com
                auth xoauth2
                tls off
                passwordeval usher token --user kim@example.com --min-valid 5m

                """
            )
            chmod(rc, 0o600)
            let message = "Subject: hello\n\nfrom a kiosk\n"
            let sent = try await bench.bash("msmtp -C \(rc) ann@example.com", stdin: message)
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(
                server.stderr.contains("accepted mail from kim@example.com for kim@example.com"),
                "\(server.stderr)"
            )

            _ = try await bench.client.result("logout")
            let closed = try await bench.bash("msmtp -C \(rc) ann@example.com", stdin: message)
            #expect(closed.status != 0)
            #expect(server.stderr.components(separatedBy: "accepted mail").count == 2)
        }
    }

    @Test func gitFindsTheHelperByItsNameGitCredentialUsher() async throws {
        try await Self.withBench { bench in
            // As make install links it: git-credential-usher next to usher.
            let bin = bench.directory.file("bin")
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: "\(bin)/git-credential-usher",
                withDestinationPath: try BuiltProducts.path(of: "usher")
            )
            var environment = bench.environment
            environment["PATH"] = "\(bin):" + (environment["PATH"] ?? "")
            let filled = try await runProcess(
                "/usr/bin/git",
                // usher answers only for the hosts it is told of: here git's usher.host setting.
                ["-c", "credential.helper=usher", "-c", "usher.host=git.example.com", "credential", "fill"],
                stdin: "protocol=https\nhost=git.example.com\n\n",
                environment: environment.merging(["GIT_TERMINAL_PROMPT": "0"]) { _, new in new }
            )
            #expect(filled.status == 0, "\(filled.stderr)")
            #expect(filled.stdout.contains("username=oauth2\npassword=ey"), "\(filled.stdout)")
        }
    }
}
