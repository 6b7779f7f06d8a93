import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Program conditions that another program of the same uid cannot borrow (issue 36, item 3), what a script is
/// identified as (item 15), and digests that never hold up anyone else (item 4). The attacks run for real, as nobody,
/// against the real daemon: a binary bind-mounted over the trusted path in namespaces of its own, a process that
/// connects and then `exec`s the trusted program, executables of a terabyte.
@Suite(.integrationHangGuard, .enabled(if: OtherUser.unavailableReason == nil, "needs root to run clients as nobody"))
struct ProgramBorrowingTests {
    typealias Programs = ProgramIdentificationTests

    /// A daemon whose test directory other users can pass through, with `config`.
    static func daemon(_ config: String) throws -> DaemonProcess {
        let directory = try TestDirectory()
        let daemon = try DaemonProcess(config: "[daemon]\nsocket_mode = \"0666\"\n" + config, directory: directory)
        chmod(directory.path, 0o711)
        return daemon
    }

    /// The path `name` of `programs(in:)` will have.
    static func programPath(_ daemon: DaemonProcess, _ name: String) -> String {
        daemon.directory.file("programs/\(name)")
    }

    /// `usher whoami --program --json` run as nobody, through `wrapper` (a command that runs the rest of its
    /// arguments): hello's answer.
    static func hello(
        _ program: String,
        through wrapper: [String] = [],
        uid: String = "nobody",
        _ daemon: DaemonProcess
    ) async throws -> JSONValue {
        let output = try await runProcess(
            "/usr/bin/setpriv",
            ["--reuid=\(uid)", "--regid=nogroup", "--clear-groups"] + wrapper
                + [program, "whoami", "--program", "--json", "--socket", daemon.socketPath]
        )
        #expect(output.status == 0, "\(output.stderr)")
        return try JSONDecoder().decode(JSONValue.self, from: Data(output.stdout.utf8))
    }

    /// nobody, in a user and mount namespace of its own (where it is "root"), bind-mounts `impostor` over `trusted`
    /// and runs `trusted`: hello's answer.
    static func helloMountedOver(
        _ impostor: String,
        _ trusted: String,
        _ daemon: DaemonProcess
    ) async throws
        -> JSONValue
    {
        let script = #"mount --bind "$1" "$2" && exec "$2" whoami --program --json --socket "$3""#
        let output = try await runProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/unshare", "-Urm", "/bin/sh", "-c",
                script, "sh", impostor, trusted, daemon.socketPath,
            ]
        )
        #expect(output.status == 0, "\(output.stderr)")
        return try JSONDecoder().decode(JSONValue.self, from: Data(output.stdout.utf8))
    }

    // MARK: - Item 3: namespaces and bind mounts

    /// `/proc/PID/exe` of the impostor shows the trusted path, but the file is another (its inode is not that of the
    /// path as usherd sees it) and the process is in namespaces of its own: the rule does not match, under
    /// `no_new_privs` or not.
    @Test func aBinaryBindMountedOverTheTrustedPathDoesNotMatch() async throws {
        let daemon = try Self.daemon("")
        let kiosk = Self.programPath(daemon, "kiosk-app")
        try daemon.directory.write(
            "usherd.toml",
            "[daemon]\nsocket_mode = \"0666\"\n[[access.rule]]\nuid = 65534\nexecutable = \"\(kiosk)\"\n"
                + "allow = [\"read\"]\n"
        )
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let programs = try Programs.programs(in: daemon, ["kiosk-app", "impostor"])
            #expect(try await Self.hello(programs[0], daemon)["permissions"] == ["read"])
            #expect(try await Self.hello(programs[1], daemon)["permissions"] == [])

            let impostor = try await Self.helloMountedOver(programs[1], programs[0], daemon)
            #expect(impostor["program"]?["executable"] == .string(programs[0]), "the path the impostor shows")
            #expect(impostor["permissions"] == [], "a bind mount borrowed the rule: \(impostor)")

            let noNewPrivileges = try await Self.hello(
                programs[0],
                through: ["--no-new-privs", "/usr/bin/unshare", "-Urm"],
                daemon
            )
            #expect(noNewPrivileges["permissions"] == [], "\(noNewPrivileges)")
        }
    }

    /// The genuine program in a namespace of its own (a container meant to match) matches only a rule that says
    /// `namespace = "any"`; in the host's namespaces it matches both.
    @Test func aRuleMatchesInAnotherNamespaceOnlyWhenItSaysAny() async throws {
        let daemon = try Self.daemon("")
        let kiosk = Self.programPath(daemon, "kiosk-app")
        try daemon.directory.write(
            "usherd.toml",
            "[daemon]\nsocket_mode = \"0666\"\n"
                + "[[access.rule]]\nuid = 65534\nexecutable = \"\(kiosk)\"\nallow = [\"read\"]\n"
                + "[[access.rule]]\nuid = 65534\nexecutable = \"\(kiosk)\"\nnamespace = \"any\"\nallow = [\"token\"]\n"
        )
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let programs = try Programs.programs(in: daemon, ["kiosk-app"])
            #expect(try await Self.hello(programs[0], daemon)["permissions"] == ["read", "token"])
            let contained = try await Self.hello(programs[0], through: ["/usr/bin/unshare", "-Urm"], daemon)
            #expect(contained["program"]?["identified"] == true)
            #expect(contained["permissions"] == ["token"], "\(contained)")
        }
        _ = try await expectConfigurationError(
            "[[access.rule]]\nuid = 1000\nexecutable = \"/usr/bin/kiosk\"\nnamespace = \"container\"\n"
                + "allow = [\"read\"]\n",
            naming: "access.rule[1].namespace"
        )
        _ = try await expectConfigurationError(
            "[[access.rule]]\nuid = 1000\nnamespace = \"any\"\nallow = [\"read\"]\n",
            naming: "access.rule[1].namespace"
        )
    }

    // MARK: - Item 3: exec since connect

    /// The attack of the issue, made certain: while the daemon is stopped, a process of nobody connects, writes its
    /// requests, forks a child that keeps the socket, and `exec`s the trusted program; the daemon goes on only once
    /// the trusted program runs, so that is what it finds at the pid that connected. The child reads the answers.
    /// The trusted program holds the socket only because it inherited it (not close-on-exec): nothing matches.
    @Test func aProcessThatConnectsThenExecsTheTrustedProgramDoesNotMatch() async throws {
        let sleep = Programs.realPath("/usr/bin/sleep")
        let daemon = try Self.daemon(
            "[[access.rule]]\nuid = 65534\nexecutable = \"\(sleep)\"\nallow = [\"read\", \"token\"]\n"
        )
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let output = try await runProcess(
                "/usr/bin/python3",
                ["-c", Self.connectThenExecTheTrustedProgram, daemon.socketPath, "\(daemon.pid)", sleep]
            )
            #expect(output.status == 0, "\(output.stderr)")
            let answers = try output.stdout.split(separator: "\n").map {
                try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8))
            }
            try #require(answers.count == 2, "\(output.stdout)")
            #expect(answers[0]["result"]?["peer"]?["uid"] == 65534)
            #expect(answers[0]["result"]?["program"]?["identified"] == false, "\(answers[0])")
            #expect(answers[0]["result"]?["permissions"] == [], "\(answers[0])")
            #expect(answers[1]["error"]?["code"] == "permission_denied", "\(answers[1])")
        }
    }

    /// python, as root: stop the daemon (argv[2]); a child switches to nobody, connects to argv[1], writes hello and
    /// current_user, forks a grandchild that keeps the socket, and execs argv[3] (`sleep 60`) with the socket
    /// inherited. Once the child runs argv[3], the daemon goes on; the grandchild reads both answers and hands them
    /// to the parent through a pipe; the parent prints them and ends the child.
    static let connectThenExecTheTrustedProgram = """
        \(StoppedDaemonScript.functions)
        import socket, sys, time
        path, daemon, trusted = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        answers_read, answers_write = os.pipe()

        stop_daemon(daemon)
        try:
            child = os.fork()
            if child == 0:
                os.close(answers_read)
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                s.sendall(b'{"id":1,"method":"hello"}\\n{"id":2,"method":"current_user"}\\n')
                if os.fork() == 0:
                    answer = b''
                    while answer.count(b'\\n') < 2:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        answer += chunk
                    os.write(answers_write, answer)
                    os._exit(0)
                os.set_inheritable(s.fileno(), True)
                os.close(answers_write)
                os.execv(trusted, [trusted, '60'])
            os.close(answers_write)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if os.readlink(f'/proc/{child}/exe') == trusted:
                        break
                except OSError:
                    pass
                os.sched_yield()
        finally:
            os.kill(daemon, signal.SIGCONT)
        answer = b''
        while True:
            chunk = os.read(answers_read, 65536)
            if not chunk:
                break
            answer += chunk
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        sys.stdout.buffer.write(answer)
        """

    // MARK: - Item 15: scripts

    /// A script runs as its interpreter: `/proc/PID/exe` is the interpreter's file, never the script. A rule naming
    /// the script never matches; one naming the interpreter matches every script it runs (and the interpreter run
    /// by hand), which is why a rule for a script names a unit, or the interpreter under a uid of its own.
    @Test func aScriptIsIdentifiedAsItsInterpreter() async throws {
        let python = Programs.realPath("/usr/bin/python3")
        let daemon = try Self.daemon("")
        let script = daemon.directory.file("programs/kiosk-script")
        try daemon.directory.write(
            "usherd.toml",
            "[daemon]\nsocket_mode = \"0666\"\n[[access.rule]]\nuid = 65534\nexecutable = \"\(script)\"\n"
                + "allow = [\"read\"]\n"
        )
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            try FileManager.default.createDirectory(
                atPath: daemon.directory.file("programs"),
                withIntermediateDirectories: true
            )
            chmod(daemon.directory.file("programs"), 0o755)
            try ExecutableFile.write("#!/usr/bin/python3\n" + Self.helloScript, to: script)
            let output = try await runProcess(
                "/usr/bin/setpriv",
                ["--reuid=nobody", "--regid=nogroup", "--clear-groups", script, daemon.socketPath]
            )
            #expect(output.status == 0, "\(output.stderr)")
            let answer = try JSONDecoder().decode(JSONValue.self, from: Data(output.stdout.utf8))
            #expect(answer["result"]?["program"]?["identified"] == true)
            #expect(answer["result"]?["program"]?["executable"] == .string(python))
            #expect(answer["result"]?["permissions"] == [])
        }
        let page = try String(
            contentsOf: DocumentationTests.root.appendingPathComponent("docs/least-privilege.md"),
            encoding: .utf8
        )
        #expect(page.contains("### Scripts are their interpreter"), "docs/least-privilege.md says what a script is")
    }

    /// python: connect to argv[1], say hello, print the answer.
    static let helloScript = """
        from socket import AF_UNIX, SOCK_STREAM, socket
        from sys import argv, stdout
        s = socket(AF_UNIX, SOCK_STREAM)
        s.connect(argv[1])
        s.sendall(b'{"id":1,"method":"hello"}\\n')
        answer = b''
        while not answer.endswith(b'\\n'):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        stdout.buffer.write(answer)
        """

    // MARK: - Item 4: digests

    /// A copy of the CLI made larger (sparse, so it costs no disk) than the largest file usherd hashes by default
    /// (256 MiB): it has no digest, and a rule with its very digest does not match it. It is answered at once.
    @Test func anExecutableLargerThanTheCapHasNoDigest() async throws {
        let daemon = try Self.daemon("")
        try await DaemonProcess.using(daemon) { daemon in
            let programs = try Programs.programs(in: daemon, ["large", "small"])
            guard truncate(programs[0], 300 << 20) == 0 else { throw TestSupportError("truncate failed") }
            let digest = try await Programs.sha256(of: programs[0])
            let small = try await Programs.sha256(of: programs[1])
            try daemon.directory.write(
                "usherd.toml",
                "[daemon]\nsocket_mode = \"0666\"\n"
                    + "[[access.rule]]\nuid = 65534\nexecutable_sha256 = \"\(digest)\"\nallow = [\"read\"]\n"
                    + "[[access.rule]]\nuid = 65534\nexecutable_sha256 = \"\(small)\"\nallow = [\"token\"]\n"
            )
            try await daemon.start()
            let large = try await Self.hello(programs[0], daemon)
            #expect(large["program"]?["identified"] == true)
            #expect(large["program"]?["executable_sha256"] == nil, "\(large)")
            #expect(large["permissions"] == [])
            let hashed = try await Self.hello(programs[1], daemon)
            #expect(hashed["program"]?["executable_sha256"] == .string(small))
            #expect(hashed["permissions"] == ["token"])
        }
    }

    /// While usherd hashes nobody's executables of a terabyte (the cap raised to allow them), root's connections and
    /// another uid's (whose own executable is hashed too, on the other thread: uids take turns) are answered, on
    /// both sockets. The test waits until usherd has a large file open, not for any time to pass.
    @Test func hashingALargeExecutableHoldsUpNoOtherConnection() async throws {
        let daemon = try Self.daemon(
            "[limits]\nmax_hashed_executable_bytes = 1099511627776\n"
                + "[[access.rule]]\nuid = 65534\nexecutable_sha256 = \"\(String(repeating: "0", count: 64))\"\n"
                + "allow = [\"read\"]\n"
                + "[[access.rule]]\nuid = 65533\nexecutable_sha256 = \"\(String(repeating: "0", count: 64))\"\n"
                + "allow = [\"read\"]\n[[access.rule]]\nuid = 65533\nallow = [\"token\"]\n"
        )
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let programs = try Programs.programs(in: daemon, ["large-1", "large-2", "large-3", "other"])
            var waiting: [SpawnedProcess] = []
            defer { for process in waiting { process.signal(SIGKILL) } }
            for program in programs.prefix(3) {
                guard truncate(program, (1 << 40) - (1 << 20)) == 0 else { throw TestSupportError("truncate failed") }
                waiting.append(
                    try SpawnedProcess(
                        "/usr/bin/setpriv",
                        [
                            "--reuid=nobody", "--regid=nogroup", "--clear-groups", program, "whoami", "--program",
                            "--json", "--socket", daemon.socketPath,
                        ]
                    )
                )
            }
            // The state waited for: usherd has one of the large files open, hashing it.
            try await eventually { Self.opened(by: daemon.pid, anyOf: Array(programs.prefix(3))) }

            let root = try daemon.connect()
            #expect(try await root.result("hello")["permissions"] == ["read", "token", "manage"])
            let varlink = try LineConnection(path: daemon.varlinkPath)
            let reply = try await varlink.varlink("io.usher.Session.Hello")
            #expect(reply["parameters"]?["permissions"] == ["read", "token", "manage"], "\(reply)")
            let other = try await Self.hello(programs[3], uid: "65533", daemon)
            #expect(other["permissions"] == ["token"])
            #expect(other["program"]?["executable_sha256"] != nil, "hashed beside the large file: \(other)")
            // Still hashing: none of nobody's connections has been answered.
            let unanswered = waiting.allSatisfy { $0.isRunning }
            #expect(unanswered)
            #expect(Self.opened(by: daemon.pid, anyOf: Array(programs.prefix(3))))
        }
    }

    /// Whether process `pid` has one of `paths` open.
    static func opened(by pid: Int32, anyOf paths: [String]) -> Bool {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return descriptors.contains { descriptor in
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)")
            return target.map(paths.contains) ?? false
        }
    }
}
