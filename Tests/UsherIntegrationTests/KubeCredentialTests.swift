import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// usher as kubectl's exec credential plugin, with the real `kubectl` against an HTTPS server that answers `/version`
/// and `/api` only to a token usherd issued (Tests/Fixtures/token-servers/kube_server.py; issue 23).
@Suite(.integrationHangGuard)
struct KubeCredentialTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/token-servers/kube_server.py").path

    static func kubectl() -> String? {
        ["/usr/bin/kubectl", "/usr/local/bin/kubectl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test func kubectlGetsItsTokenFromUsherAndFailsWithoutOne() async throws {
        guard let kubectl = Self.kubectl() else {
            Issue.record("kubectl is not installed: make test-deps installs Debian's kubernetes-client")
            return
        }
        try await DaemonProcess.with { daemon in
            let directory = try TestDirectory()
            defer { directory.remove() }
            let client = try daemon.connect()
            let jwks = try await client.result("jwks")
            try directory.write("jwks.json", String(decoding: try JSONEncoder().encode(jwks), as: UTF8.self))
            let server = try BackgroundProcess(
                TestPython.executable,
                [Self.fixture, directory.path, directory.file("jwks.json")]
            )
            let listening = try await server.stderrLine(within: .seconds(90)) { $0.hasPrefix("listening on ") }
            let url = String(listening.dropFirst("listening on ".count))
            let usher = URL(fileURLWithPath: try BuiltProducts.path(of: "usher")).deletingLastPathComponent().path
            let kubeconfig = directory.file("kubeconfig")
            let environment = [
                "PATH": "\(usher):/usr/bin:/bin", "HOME": directory.path, "KUBECONFIG": kubeconfig,
                "USHER_SOCKET": daemon.socketPath,
            ]
            func run(_ executable: String, _ arguments: [String]) async throws -> ProcessOutput {
                try await runProcess(executable, arguments, environment: environment)
            }
            for arguments in [
                [
                    "config", "set-cluster", "test", "--server=\(url)",
                    "--certificate-authority=\(directory.file("ca.pem"))",
                ],
                ["config", "set-context", "test", "--cluster=test"],
                ["config", "use-context", "test"],
            ] {
                let configured = try await run(kubectl, arguments)
                #expect(configured.status == 0, "\(configured.stderr)")
            }
            let setup = try await run(try BuiltProducts.path(of: "usher"), ["setup-kube", "--context", "test"])
            #expect(setup.status == 0, "\(setup.stderr)")
            let stanza = try String(contentsOfFile: kubeconfig, encoding: .utf8)
            #expect(stanza.contains("kube-credential"), "\(stanza)")
            #expect(stanza.contains("server: \(url)"), "the rest of the kubeconfig stays: \(stanza)")

            // Nobody logged in: kubectl fails, with usher's reason.
            let refused = try await run(kubectl, ["get", "--raw", "/api"])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("no user is logged in"), "\(refused.stderr)")

            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            _ = try await client.result(
                "login",
                ["credentials": ["type": "email_password", "email": "ann@example.com", "password": "secret one"]]
            )
            let api = try await run(kubectl, ["get", "--raw", "/api"])
            #expect(api.status == 0, "\(api.stderr)")
            #expect(api.stdout.contains("APIVersions"))
            let version = try await run(kubectl, ["version", "-o", "json"])
            #expect(version.stdout.contains("v1.30.0-usher-test"), "\(version.stdout) \(version.stderr)")
            #expect(server.stderr.contains("request by ann@example.com /api"))
        }
    }

    @Test func theCredentialIsInTheAPIVersionKubectlAskedFor() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            for version in ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"] {
                let info = #"{"apiVersion":"\#(version)","kind":"ExecCredential","spec":{"interactive":false}}"#
                var environment = ProcessInfo.processInfo.environment
                environment["USHER_SOCKET"] = daemon.socketPath
                environment["KUBERNETES_EXEC_INFO"] = info
                let run = try await runProcess(
                    try BuiltProducts.path(of: "usher"),
                    ["kube-credential", "--min-valid", "10m"],
                    environment: environment
                )
                #expect(run.status == 0, "\(run.stderr)")
                let credential = try JSONDecoder().decode(JSONValue.self, from: Data(run.stdout.utf8))
                #expect(credential["apiVersion"] == .string(version))
                #expect(credential["kind"] == "ExecCredential")
                #expect(credential["status"]?["token"]?.stringValue?.hasPrefix("ey") == true)
                #expect(credential["status"]?["expirationTimestamp"]?.stringValue?.hasSuffix("Z") == true)
            }
            var environment = ProcessInfo.processInfo.environment
            environment["USHER_SOCKET"] = daemon.socketPath
            environment["KUBERNETES_EXEC_INFO"] = #"{"apiVersion":"client.authentication.k8s.io/v2"}"#
            let unknown = try await runProcess(
                try BuiltProducts.path(of: "usher"),
                ["kube-credential"],
                environment: environment
            )
            #expect(unknown.status == 1)
            #expect(unknown.stdout.isEmpty)
        }
    }
}
