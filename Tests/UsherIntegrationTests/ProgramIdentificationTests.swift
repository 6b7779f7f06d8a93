import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `[[access.rule]]` with program conditions: the real daemon identifies the program at the other end of each
/// connection (its executable, the file's SHA-256, its systemd units) and grants what the matching rules allow.
///
/// The clients run as `nobody` (root and the daemon's own uid have every permission whatever the rules say), so
/// these tests need root; they are skipped, and say why, elsewhere.
@Suite(.integrationHangGuard, .enabled(if: OtherUser.unavailableReason == nil, "needs root to run clients as nobody"))
struct ProgramIdentificationTests {
    static let nobody = "uid = 65534\n"

    /// Copies of the `usher` CLI at `names` in a directory of the daemon's test directory that nobody can run.
    static func programs(in daemon: DaemonProcess, _ names: [String]) throws -> [String] {
        let directory = daemon.directory.file("programs")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        chmod(directory, 0o755)
        let usher = try BuiltProducts.path(of: "usher")
        return try names.map { name in
            let path = "\(directory)/\(name)"
            try ExecutableFile.copy(usher, to: path)
            return path
        }
    }

    /// Runs `program` (a copy of the CLI) as nobody against `daemon`.
    static func asNobody(
        _ program: String,
        _ arguments: [String],
        _ daemon: DaemonProcess
    ) async throws
        -> ProcessOutput
    {
        try await runProcess(
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=nogroup", "--clear-groups", program] + arguments
                + ["--socket", daemon.socketPath]
        )
    }

    /// `usher whoami --program --json` run as nobody: hello's answer, as the daemon sent it.
    static func hello(_ program: String, _ daemon: DaemonProcess) async throws -> JSONValue {
        let output = try await Self.asNobody(program, ["whoami", "--program", "--json"], daemon)
        #expect(output.status == 0, "\(output.stderr)")
        return try JSONDecoder().decode(JSONValue.self, from: Data(output.stdout.utf8))
    }

    static func sha256(of path: String) async throws -> String {
        let output = try await runProcess("/usr/bin/sha256sum", [path])
        #expect(output.status == 0, "\(output.stderr)")
        return String(output.stdout.prefix(64))
    }

    static func realPath(_ path: String) -> String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }

    @Test func twoCopiesOfOneProgramGetWhatTheirOwnRulesAllow() async throws {
        let directory = try TestDirectory()
        let kiosk = directory.file("programs/kiosk-app")
        let config =
            "[[access.rule]]\n\(Self.nobody)allow = [\"read\"]\n"
            + "[[access.rule]]\n\(Self.nobody)executable = \"\(kiosk)\"\nallow = [\"token\"]\n"
        let daemon = try DaemonProcess(config: "[daemon]\nsocket_mode = \"0666\"\n" + config, directory: directory)
        chmod(directory.path, 0o711)
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let programs = try Self.programs(in: daemon, ["kiosk-app", "media-player"])
            #expect(programs[0] == kiosk)
            let root = try daemon.connect()
            _ = try await root.result("login", ["credentials": ["type": "anonymous"]])

            let kioskHello = try await Self.hello(programs[0], daemon)
            #expect(kioskHello["permissions"] == ["read", "token"])
            #expect(kioskHello["program"]?["identified"] == true)
            #expect(kioskHello["program"]?["executable"] == .string(programs[0]))
            // No rule asks for a digest: none is computed.
            #expect(kioskHello["program"]?["executable_sha256"] == nil)
            let human = try await Self.asNobody(programs[0], ["whoami", "--program"], daemon)
            #expect(human.status == 0, "\(human.stderr)")
            #expect(human.stdout.contains("executable   \(programs[0])\n"), "\(human.stdout)")
            #expect(human.stdout.contains("permissions  read, token\n"), "\(human.stdout)")
            let playerHello = try await Self.hello(programs[1], daemon)
            #expect(playerHello["permissions"] == ["read"])
            #expect(playerHello["program"]?["executable"] == .string(programs[1]))

            // What the permissions mean: the kiosk app gets a token, the same program at another path does not.
            let token = try await Self.asNobody(programs[0], ["token"], daemon)
            #expect(token.status == 0, "\(token.stderr)")
            #expect(token.stdout.split(separator: ".").count == 3, "a JWT: \(token.stdout)")
            let refused = try await Self.asNobody(programs[1], ["token"], daemon)
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("\"token\" permission"), "\(refused.stderr)")
            #expect((try await Self.asNobody(programs[1], ["whoami"], daemon)).status == 0)
        }
    }

    @Test func aDigestRuleMatchesTheFileWhereverItIs() async throws {
        let usherDigest = try await Self.sha256(of: try BuiltProducts.path(of: "usher"))
        let config =
            "[[access.rule]]\n\(Self.nobody)executable_sha256 = \"\(usherDigest.uppercased())\"\n"
            + "allow = [\"read\"]\n"
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(config)) { daemon in
            try await daemon.start()
            let programs = try Self.programs(in: daemon, ["one", "two"])
            for program in programs {
                let hello = try await Self.hello(program, daemon)
                #expect(hello["permissions"] == ["read"])
                #expect(hello["program"]?["executable_sha256"] == .string(usherDigest))
            }
            // Another file: its digest is computed too, and does not match.
            let socat = try await AccessPolicyTests.asNobody(daemon, [#"{"id":1,"method":"hello"}"#])
            #expect(socat.first?["result"]?["permissions"] == [])
            let socatDigest = try await Self.sha256(of: Self.realPath("/usr/bin/socat"))
            #expect(socat.first?["result"]?["program"]?["executable_sha256"] == .string(socatDigest))
        }
    }

    /// A reload that adds an `executable_sha256` rule applies to a connection that is already open: its executable
    /// (here the test runner's own, as the connection is the test process's) is hashed before the rule is in force.
    @Test func aReloadAddingADigestRuleAppliesToOpenConnections() async throws {
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon("")) { daemon in
            try await daemon.start()
            let client = try await OtherUser.connect(path: daemon.socketPath)
            client.timeout = .seconds(120)
            let before = try await client.result("hello")
            #expect(before["permissions"] == [])
            let runner = "/proc/\(getpid())/exe"
            #expect(before["program"]?["executable"] == .string(Self.realPath(runner)))
            #expect(before["program"]?["executable_sha256"] == nil)
            #expect(try await client.errorCode("current_user") == "permission_denied")

            let digest = try await Self.sha256(of: runner)
            try await AccessPolicyTests.reload(
                daemon,
                "[[access.rule]]\n\(Self.nobody)executable_sha256 = \"\(digest)\"\nallow = [\"read\"]\n"
            )
            let after = try await client.result("hello")
            #expect(after["permissions"] == ["read"])
            #expect(after["program"]?["executable_sha256"] == .string(digest))
            #expect(try await client.errorCode("current_user") == nil)
        }
    }

    /// Identity is taken when the connection is accepted, and holds only while the process runs that program: one
    /// that `exec`s another afterwards and goes on using the connection loses what its program conditions gave it.
    /// Here python connects (its rule allows `read`), then becomes socat on the same socket.
    @Test func aProcessThatExecsAfterConnectingLosesItsProgramRules() async throws {
        let python = Self.realPath("/usr/bin/python3")
        let config = "[[access.rule]]\n\(Self.nobody)executable = \"\(python)\"\nallow = [\"read\"]\n"
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(config)) { daemon in
            try await daemon.start()
            let output = try await runProcess(
                "/usr/bin/setpriv",
                [
                    "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", "-c",
                    Self.connectThenExec, daemon.socketPath, "/usr/bin/socat",
                ],
                stdin: #"{"id":2,"method":"hello"}"# + "\n" + #"{"id":3,"method":"current_user"}"# + "\n"
            )
            #expect(output.status == 0, "\(output.stderr)")
            let lines = try output.stdout.split(separator: "\n").map {
                try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8))
            }
            try #require(lines.count == 3, "\(output.stdout)")
            #expect(lines[0]["result"]?["program"]?["executable"] == .string(python))
            #expect(lines[0]["result"]?["program"]?["identified"] == true)
            #expect(lines[0]["result"]?["permissions"] == ["read"])
            // After the exec: socat, on python's connection, is no longer the program that connected.
            #expect(lines[1]["result"]?["program"]?["executable"] == .string(python))
            #expect(lines[1]["result"]?["program"]?["identified"] == false)
            #expect(lines[1]["result"]?["permissions"] == [])
            #expect(lines[1]["result"]?["peer"]?["pid"] == lines[0]["result"]?["peer"]?["pid"])
            #expect(lines[2]["error"]?["code"] == "permission_denied", "current_user: \(lines[2])")
        }
    }

    /// python: connect to argv[1], say hello, print the answer, then exec argv[2] (socat) on the same socket (socat
    /// shuts the socket down for writing at the end of its input, as it does a UNIX-CONNECT address).
    static let connectThenExec = """
        import os, socket, sys
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        s.sendall(b'{"id":1,"method":"hello"}\\n')
        answer = b''
        while not answer.endswith(b'\\n'):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        sys.stdout.buffer.write(answer)
        sys.stdout.flush()
        os.set_inheritable(s.fileno(), True)
        os.execv(sys.argv[2], [sys.argv[2], '-', 'FD:%d,shut-down' % s.fileno()])
        """

    /// A peer that is gone before the daemon accepts its connection (while the daemon is stopped, a child connects as
    /// nobody, hands the socket to its parent and exits) cannot be identified: a rule with a program condition does
    /// not match it, even though the socket is still used, by its parent, running the very program the rule names.
    @Test func aPeerThatCannotBeIdentifiedMatchesNoProgramRule() async throws {
        let python = Self.realPath("/usr/bin/python3")
        let config = "[[access.rule]]\n\(Self.nobody)executable = \"\(python)\"\nallow = [\"read\"]\n"
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(config)) { daemon in
            try await daemon.start()
            let output = try await runProcess(
                "/usr/bin/python3",
                ["-c", Self.connectFromAChildThatExits, daemon.socketPath, "\(daemon.pid)"]
            )
            #expect(output.status == 0, "\(output.stderr)")
            let answer = try JSONDecoder().decode(JSONValue.self, from: Data(output.stdout.utf8))
            #expect(answer["result"]?["peer"]?["uid"] == 65534)
            #expect(answer["result"]?["program"]?["identified"] == false)
            #expect(answer["result"]?["program"]?["executable"] == .null)
            #expect(answer["result"]?["permissions"] == [])
        }
    }

    /// python, as root: stop the daemon (argv[2]) and wait until all its threads have stopped; a child switches to
    /// nobody, connects to argv[1], sends hello, passes the socket to its parent and exits; the parent reaps it, lets
    /// the daemon go on, and prints the answer.
    static let connectFromAChildThatExits = """
        \(StoppedDaemonScript.functions)
        import socket, sys
        daemon = int(sys.argv[2])
        parent_end, child_end = socket.socketpair()

        stop_daemon(daemon)
        try:
            child = os.fork()
            if child == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sys.argv[1])
                s.sendall(b'{"id":1,"method":"hello"}\\n')
                socket.send_fds(child_end, [b'x'], [s.fileno()])
                os._exit(0)
            _, fds, _, _ = socket.recv_fds(parent_end, 1, 1)
            os.waitpid(child, 0)
        finally:
            os.kill(daemon, signal.SIGCONT)
        s = socket.socket(fileno=fds[0])
        answer = b''
        while not answer.endswith(b'\\n'):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        sys.stdout.buffer.write(answer)
        """

    @Test func badProgramConditionsAreStartupErrors() async throws {
        let rule = "[[access.rule]]\nuid = 1000\nallow = [\"read\"]\n"
        _ = try await expectConfigurationError(
            rule + "executable = \"bin/kiosk\"\n",
            naming: "access.rule[1].executable"
        )
        _ = try await expectConfigurationError(
            rule + "executable_sha256 = \"abc\"\n",
            naming: "access.rule[1].executable_sha256"
        )
        _ = try await expectConfigurationError(rule + "unit = \"kiosk\"\n", naming: "access.rule[1].unit")
        _ = try await expectConfigurationError(
            rule + "user_unit = \"a/b.service\"\n",
            naming: "access.rule[1].user_unit"
        )
    }
}
