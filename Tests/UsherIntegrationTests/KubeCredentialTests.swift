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

    /// Debian 12's own kubectl (kubernetes-client 1.20), which `make test-deps` unpacks under .build whatever kubectl
    /// the machine has: its `kubectl config set-credentials` panics on kubeconfigs like the one below (issue 42).
    static let debianKubectl = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/debian-kubectl/usr/bin/kubectl").path

    @Test func kubectlGetsItsTokenFromUsherAndFailsWithoutOne() async throws {
        guard let kubectl = Self.kubectl() else {
            Issue.record("kubectl is not installed: make test-deps installs Debian's kubernetes-client")
            return
        }
        try await Self.check(kubectl)
    }

    @Test func setupKubeWorksWithDebian12sKubectl() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.debianKubectl) else {
            Issue.record("\(Self.debianKubectl) is missing: make test-deps unpacks Debian's kubernetes-client there")
            return
        }
        let version = try await runProcess(Self.debianKubectl, ["version", "--client"])
        #expect(version.stdout.contains("v1.20."), "\(version.stdout)")
        try await Self.check(Self.debianKubectl)
    }

    /// setup-kube on a realistic kubeconfig (a cluster with a certificate-authority file and an extension, another
    /// cluster, context and user, preferences) that `kubectl` wrote, then `kubectl` against the test API server with
    /// the token usher gives it.
    static func check(_ kubectl: String) async throws {
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
            // This kubectl is the one on PATH too, the one a user of that machine has.
            let tools = URL(fileURLWithPath: kubectl).deletingLastPathComponent().path
            let environment = [
                "PATH": "\(usher):\(tools):/usr/bin:/bin", "HOME": directory.path, "KUBECONFIG": kubeconfig,
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
                ["config", "set-cluster", "other", "--server=https://other.example:6443"],
                ["config", "set-context", "other", "--cluster=other", "--user=admin", "--namespace=ops"],
                ["config", "set-context", "test", "--cluster=test", "--namespace=dev"],
                ["config", "use-context", "test"],
            ] {
                let configured = try await run(kubectl, arguments)
                #expect(configured.status == 0, "\(configured.stderr)")
            }
            // What kubectl config does not set: preferences and an extension, as other tools write them; and another
            // user, which Debian's kubectl cannot add (its set-credentials is the command that panics).
            var written = try String(contentsOfFile: kubeconfig, encoding: .utf8)
            written =
                written.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                    line.hasPrefix("users:") ? "users:\n- name: admin\n  user:\n    token: admin-token" : String(line)
                }.joined(separator: "\n")
            written = written.replacingOccurrences(of: "preferences: {}", with: "preferences:\n  colors: true")
            written = written.replacingOccurrences(
                of: "    server: \(url)\n",
                with: "    server: \(url)\n    extensions:\n    - name: usher.test/marker\n      extension:\n"
                    + "        note: \"kept: yes\"\n"
            )
            try written.write(toFile: kubeconfig, atomically: true, encoding: .utf8)
            let before = try await run(kubectl, ["config", "view", "-o", "json"])
            #expect(before.status == 0, "\(before.stderr)")

            let setup = try await run(try BuiltProducts.path(of: "usher"), ["setup-kube", "--context", "test"])
            #expect(setup.status == 0, "\(setup.stderr)")
            let stanza = try String(contentsOfFile: kubeconfig, encoding: .utf8)
            #expect(stanza.contains("kube-credential"), "\(stanza)")
            #expect(stanza.contains("command: \(try BuiltProducts.path(of: "usher"))"), "\(stanza)")

            // Everything else stays, as kubectl reads it: the rest of the view is the one before.
            let after = try await run(kubectl, ["config", "view", "-o", "json"])
            #expect(after.status == 0, "\(after.stderr)")
            var expected = try JSONDecoder().decode(JSONValue.self, from: Data(before.stdout.utf8))
            let actual = try JSONDecoder().decode(JSONValue.self, from: Data(after.stdout.utf8))
            let users = actual["users"]?.arrayValue ?? []
            #expect(users.map { $0["name"] } == ["admin", "usher-test"])
            #expect(
                users.first?["user"]?["token"] != nil,
                "the other user keeps its credentials: \(after.stdout)"
            )
            let exec = users.last?["user"]?["exec"]
            #expect(exec?["args"] == ["kube-credential"])
            #expect(exec?["apiVersion"] == "client.authentication.k8s.io/v1beta1")
            // The only differences: the new user, and the context's user.
            if case .object(var root) = expected, case .array(var contexts)? = root["contexts"],
                let index = contexts.firstIndex(where: { $0["name"] == "test" }),
                case .object(var context) = contexts[index], case .object(var inner)? = context["context"]
            {
                inner["user"] = "usher-test"
                context["context"] = .object(inner)
                contexts[index] = .object(context)
                root["contexts"] = .array(contexts)
                root["users"] = .array(users)
                expected = .object(root)
            }
            #expect(actual == expected, "before: \(before.stdout)\nafter: \(after.stdout)")
            #expect(actual["preferences"] == ["colors": true])
            #expect(after.stdout.contains("usher.test/marker"))

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

            // Again: the same file (setup-kube is idempotent).
            let again = try await run(try BuiltProducts.path(of: "usher"), ["setup-kube", "--context", "test"])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try String(contentsOfFile: kubeconfig, encoding: .utf8) == stanza)
            // A context the kubeconfig does not have: an error that says so, the file untouched.
            let unknown = try await run(try BuiltProducts.path(of: "usher"), ["setup-kube", "--context", "nope"])
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("nope"), "\(unknown.stderr)")
            #expect(try String(contentsOfFile: kubeconfig, encoding: .utf8) == stanza)
        }
    }

    /// Kubeconfigs in the shapes people and tools write them: what kubectl reads from the file after setup-kube is what
    /// it read before, but for the new user and the context's user.
    static let shapes: [(String, String)] = [
        (
            "comments, quotes, flow collections and a block scalar",
            """
            # written by hand
            apiVersion: v1
            kind: Config
            clusters:
              - name: "prod"   # the production cluster
                cluster: {server: 'https://prod.example:6443', insecure-skip-tls-verify: true}
            contexts:
              - name: prod
                context:
                  cluster: prod
                  namespace: "team-a"
                  user: ''
            users:
              - name: script
                user:
                  exec:
                    apiVersion: client.authentication.k8s.io/v1beta1
                    command: sh
                    args: ["-c", "echo '{}' # not a comment"]
                    env: [{name: A, value: "1"}]
                  username: |
                    line one
                    line two
            preferences: {}
            current-context: prod
            """
        ),
        (
            "JSON",
            #"""
            {"apiVersion": "v1", "kind": "Config",
             "clusters": [{"name": "prod", "cluster": {"server": "https://prod.example:6443"}}],
             "contexts": [{"name": "prod", "context": {"cluster": "prod", "namespace": "n"}}],
             "users": [], "preferences": {"colors": false}, "current-context": "prod"}
            """#
        ),
        (
            "a replaced usher user and values that look like numbers and booleans",
            """
            ---
            apiVersion: v1
            kind: Config
            clusters:
            - cluster:
                server: https://prod.example:6443
                tls-server-name: "8443"
              name: prod
            contexts:
            - context:
                cluster: prod
                user: usher-prod
              name: prod
            users:
            - name: usher-prod
              user:
                exec:
                  apiVersion: client.authentication.k8s.io/v1beta1
                  command: /old/usher
                  args:
                  - kube-credential
            - name: "yes"
              user:
                token: "true"
            """
        ),
    ]

    @Test(arguments: 0..<3)
    func setupKubeKeepsWhatKubectlReadsFromEveryShapeOfKubeconfig(_ index: Int) async throws {
        guard let kubectl = Self.kubectl() else {
            Issue.record("kubectl is not installed: make test-deps installs Debian's kubernetes-client")
            return
        }
        let (what, text) = Self.shapes[index]
        let directory = try TestDirectory()
        defer { directory.remove() }
        let kubeconfig = directory.file("config")
        try directory.write("config", text + "\n")
        let environment = ["PATH": "/usr/bin:/bin", "HOME": directory.path, "KUBECONFIG": kubeconfig]
        let before = try await runProcess(kubectl, ["config", "view", "--raw", "-o", "json"], environment: environment)
        #expect(before.status == 0, "\(what): \(before.stderr)")
        let setup = try await runProcess(
            try BuiltProducts.path(of: "usher"),
            ["setup-kube", "--context", "prod"],
            environment: environment
        )
        #expect(setup.status == 0, "\(what): \(setup.stderr)")
        let after = try await runProcess(kubectl, ["config", "view", "--raw", "-o", "json"], environment: environment)
        #expect(after.status == 0, "\(what): \(after.stderr)")
        guard case .object(var expected) = try JSONDecoder().decode(JSONValue.self, from: Data(before.stdout.utf8)),
            case .object(let actual) = try JSONDecoder().decode(JSONValue.self, from: Data(after.stdout.utf8))
        else {
            Issue.record("\(what): kubectl config view is not a JSON object")
            return
        }
        // The context's user is usher-prod, whose exec runs usher kube-credential.
        let users = actual["users"]?.arrayValue ?? []
        let usher = try #require(users.first { $0["name"] == "usher-prod" }, "\(what): \(after.stdout)")
        #expect(usher["user"]?["exec"]?["command"]?.stringValue == (try BuiltProducts.path(of: "usher")))
        #expect(usher["user"]?["exec"]?["args"] == ["kube-credential"])
        if case .array(var contexts)? = expected["contexts"], case .object(var context)? = contexts.first,
            case .object(var inner)? = context["context"]
        {
            inner["user"] = "usher-prod"
            context["context"] = .object(inner)
            contexts[0] = .object(context)
            expected["contexts"] = .array(contexts)
        }
        // Every other user as it was, in its place.
        let others = (expected["users"]?.arrayValue ?? []).filter { $0["name"] != "usher-prod" }
        #expect(users.filter { $0["name"] != "usher-prod" } == others, "\(what): \(after.stdout)")
        expected["users"] = actual["users"]
        #expect(JSONValue.object(actual) == JSONValue.object(expected), "\(what):\n\(before.stdout)\n\(after.stdout)")
    }

    @Test func whatSetupKubeCannotReadIsRefusedAndLeftAlone() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        for (what, text) in [
            ("an anchor", "clusters:\n- &c {name: prod}\ncontexts:\n- name: prod\n  context: {cluster: prod}\n"),
            ("a tab", "contexts:\n\t- name: prod\n"),
            ("two documents", "contexts: []\n---\ncontexts: []\n"),
        ] {
            try directory.write("config", text)
            let run = try await runProcess(
                try BuiltProducts.path(of: "usher"),
                ["setup-kube", "--context", "prod", "--kubeconfig", directory.file("config")],
                environment: ["PATH": "/usr/bin:/bin", "HOME": directory.path]
            )
            #expect(run.status == 1, "\(what): \(run.stdout) \(run.stderr)")
            #expect(run.stderr.contains("cannot set up"), "\(what): \(run.stderr)")
            #expect(try String(contentsOfFile: directory.file("config"), encoding: .utf8) == text, "\(what)")
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
