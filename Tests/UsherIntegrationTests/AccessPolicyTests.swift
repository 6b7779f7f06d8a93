import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Who may do what, decided by the peer's credentials. The client runs as another user (`setpriv`) against a socket
/// anyone may open (mode 0666), so that it is the peer-credential check, not the file mode, that decides.
@Suite(.integrationHangGuard)
struct AccessPolicyTests {
    /// Runs `socat` as `nobody` with the given primary and supplementary groups, sending `lines`, returning the
    /// responses.
    static func asNobody(
        _ daemon: DaemonProcess,
        primaryGroup: String = "nogroup",
        groups: [String] = [],
        _ lines: [String]
    ) async throws -> [JSONValue] {
        let groupArguments = groups.isEmpty ? ["--clear-groups"] : ["--groups=\(groups.joined(separator: ","))"]
        let output = try await runProcess(
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=\(primaryGroup)"] + groupArguments
                + ["/usr/bin/socat", "-", "UNIX-CONNECT:\(daemon.socketPath)"],
            stdin: lines.map { $0 + "\n" }.joined()
        )
        #expect(output.status == 0, "\(output.stderr)")
        return try output.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8))
        }
    }

    static func reachableDaemon(_ config: String) async throws -> DaemonProcess {
        let daemon = try DaemonProcess(config: "[daemon]\nsocket_mode = \"0666\"\n" + config)
        // Let other users reach the socket inside the test directory (but not read the directory).
        chmod(daemon.directory.path, 0o711)
        return daemon
    }

    static func reload(_ daemon: DaemonProcess, _ config: String) async throws {
        try daemon.directory.write("usherd.toml", "[daemon]\nsocket_mode = \"0666\"\n" + config)
        let before = daemon.log.components(separatedBy: "configuration reloaded").count
        kill(daemon.pid, SIGHUP)
        let deadline = ContinuousClock.now + .seconds(60)
        while daemon.log.components(separatedBy: "configuration reloaded").count == before {
            guard ContinuousClock.now < deadline else { throw TestSupportError("the daemon did not reload") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// More supplementary groups than `SO_PEERGROUPS`' buffer holds (128) make the daemon read the peer's groups from
    /// `/proc/PID/status`; with 1,000 of them its `Groups:` line is longer than a page, and the last group must count.
    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func aGroupRuleMatchesThePeersLastGroupWhenItHasAThousand() async throws {
        let rule = "[[access.rule]]\ngroup = \"nogroup\"\nallow = [\"read\", \"token\"]\n"
        try await DaemonProcess.using(try await Self.reachableDaemon(rule)) { daemon in
            try await daemon.start()
            // The primary group is another, so that only the supplementary list can match. The kernel keeps that list
            // sorted: nogroup (65534) comes after gids 20000-20999, 6,000 bytes into the line.
            let hello = [#"{"id":1,"method":"hello"}"#]
            let groups = (20_000..<21_000).map { String($0) } + ["nogroup"]
            let answers = try await Self.asNobody(daemon, primaryGroup: "users", groups: groups, hello)
            #expect(answers.first?["result"]?["permissions"] == ["read", "token"], "\(answers)")
            let without = try await Self.asNobody(
                daemon,
                primaryGroup: "users",
                groups: Array(groups.dropLast()),
                hello
            )
            #expect(without.first?["result"]?["permissions"] == [], "\(without)")
        }
    }

    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func aReloadAppliesToConnectionsThatAreAlreadyOpen() async throws {
        let everything = "[[access.rule]]\nuid = 65534\nallow = [\"read\", \"token\", \"manage\"]\n"
        try await DaemonProcess.using(try await Self.reachableDaemon(everything)) { daemon in
            try await daemon.start()
            let root = try daemon.connect()
            let rootSubscriber = try daemon.connect()
            // Two connections of nobody's, opened while the rule allows everything.
            let client = try await OtherUser.connect(path: daemon.socketPath)
            let subscriber = try await OtherUser.connect(path: daemon.socketPath)
            for connection in [root, rootSubscriber, client, subscriber] { connection.timeout = .seconds(60) }
            _ = try await root.result("login", ["credentials": ["type": "anonymous"]])
            _ = try await rootSubscriber.result("subscribe")
            #expect(try await client.result("hello")["peer"]?["uid"] == 65534)
            #expect(try await client.result("access_token")["token_type"] == "Bearer")
            // `manage` passes the permission check (and then finds no such user).
            #expect(try await client.errorCode("switch_user", ["user_id": "u_nobody"]) == "user_not_found")
            _ = try await subscriber.result("subscribe")

            // A reload that takes away only `token`: the open connection loses exactly that.
            try await Self.reload(daemon, "[[access.rule]]\nuid = 65534\nallow = [\"read\", \"manage\"]\n")
            #expect(try await client.errorCode("access_token") == "permission_denied")
            #expect(try await client.result("hello")["permissions"] == ["read", "manage"])
            #expect(try await client.errorCode("switch_user", ["user_id": "u_nobody"]) == "user_not_found")
            // The subscriber kept `read`, and its subscription.
            _ = try await root.result("logout")
            #expect(try await subscriber.nextEvent()["event"] == "user_removed")

            // A reload that removes the rule: the same connections are denied, and the subscriber is told why in
            // its last line, then let go.
            try await Self.reload(daemon, "")
            #expect(try await client.errorCode("switch_user", ["user_id": "u_nobody"]) == "permission_denied")
            #expect(try await client.errorCode("current_user") == "permission_denied")
            var last = try await subscriber.readObject()
            while last["event"] != nil { last = try await subscriber.readObject() }
            #expect(last["id"] == .null)
            #expect(last["error"]?["code"] == "permission_denied")
            #expect(last["error"]?["message"]?.stringValue?.contains("subscription has ended") == true)
            #expect(try await subscriber.readLine() == nil)
            // Root's subscription is untouched.
            _ = try await root.result("login", ["credentials": ["type": "anonymous"]])
            var event = try await rootSubscriber.nextEvent()
            while event["event"] != "user_logged_in" { event = try await rootSubscriber.nextEvent() }
        }
    }

    @Test func peersAreAllowedExactlyWhatTheRulesGrant() async throws {
        try await DaemonProcess.using(try await Self.reachableDaemon("")) { daemon in
            try await daemon.start()
            // The daemon's own user (here root) may do everything.
            _ = try await daemon.connect().result("login", ["credentials": ["type": "anonymous"]])

            // No rules: another user may only say hello.
            var answers = try await Self.asNobody(
                daemon,
                [
                    #"{"id":1,"method":"hello"}"#, #"{"id":2,"method":"current_user"}"#,
                    #"{"id":3,"method":"access_token"}"#,
                ]
            )
            #expect(answers[0]["result"]?["peer"]?["uid"] == 65534)
            #expect(answers[0]["result"]?["permissions"] == [])
            #expect(answers[1]["error"]?["code"] == "permission_denied")
            #expect(answers[1]["error"]?["message"]?.stringValue?.contains("\"read\"") == true)
            #expect(answers[2]["error"]?["message"]?.stringValue?.contains("\"token\"") == true)

            // A uid rule granting read: reads work, tokens and changes do not.
            try await Self.reload(daemon, "[[access.rule]]\nuid = 65534\nallow = [\"read\"]\n")
            answers = try await Self.asNobody(
                daemon,
                [
                    #"{"id":1,"method":"hello"}"#, #"{"id":2,"method":"current_user"}"#,
                    #"{"id":3,"method":"access_token"}"#, #"{"id":4,"method":"logout"}"#,
                ]
            )
            #expect(answers[0]["result"]?["permissions"] == ["read"])
            #expect(answers[1]["result"]?["user"]?["kind"] == "anonymous")
            #expect(answers[2]["error"]?["code"] == "permission_denied")
            #expect(answers[3]["error"]?["message"]?.stringValue?.contains("\"manage\"") == true)

            // A group rule matches supplementary groups (SO_PEERGROUPS), and only them.
            try await Self.reload(daemon, "[[access.rule]]\ngroup = \"users\"\nallow = [\"read\", \"token\"]\n")
            answers = try await Self.asNobody(daemon, groups: ["users"], [#"{"id":1,"method":"access_token"}"#])
            #expect(answers[0]["result"]?["token_type"] == "Bearer")
            answers = try await Self.asNobody(daemon, [#"{"id":1,"method":"access_token"}"#])
            #expect(answers[0]["error"]?["code"] == "permission_denied")

            // A user rule by name, granting manage.
            try await Self.reload(daemon, "[[access.rule]]\nuser = \"nobody\"\nallow = [\"manage\", \"read\"]\n")
            answers = try await Self.asNobody(
                daemon,
                [#"{"id":1,"method":"logout"}"#, #"{"id":2,"method":"current_user"}"#]
            )
            #expect(answers[0]["result"]?["user"]?["state"] == "removed")
            #expect(answers[1]["result"]?["user"] == .null)

            // Every denied request left an audit record naming the peer and its executable; no token is logged. The
            // records are written off the request path: wait for them.
            func denials() -> [Substring] {
                daemon.log.split(separator: "\n").filter { $0.contains("audit") && $0.contains("outcome=denied") }
            }
            try await eventually {
                denials().count >= 4
                    && daemon.log.split(separator: "\n").contains {
                        $0.contains("action=access_token") && $0.contains("outcome=ok") && $0.contains("peer.uid=65534")
                    }
            }
            let denied = denials()
            #expect(denied.count >= 4)
            #expect(denied.allSatisfy { $0.contains("peer.uid=65534") && $0.contains("permission=") })
            #expect(denied.contains { $0.contains("peer.exe=/usr/bin/socat") })
            let granted = daemon.log.split(separator: "\n").filter {
                $0.contains("action=access_token") && $0.contains("outcome=ok")
            }
            #expect(granted.contains { $0.contains("peer.uid=65534") && $0.contains("user.id=u_") })
        }
    }

    @Test func badRulesAreConfigurationErrors() async throws {
        let usherd = try BuiltProducts.path(of: "usherd")
        let directory = try TestDirectory()
        defer { directory.remove() }
        let cases: [(String, String)] = [
            ("[[access.rule]]\ngroup = \"no-such-group-here\"\nallow = [\"read\"]\n", "access.rule[1].group"),
            ("[[access.rule]]\nuid = 5\nuser = \"root\"\nallow = [\"read\"]\n", "exactly one of uid, user or group"),
            ("[[access.rule]]\nuid = 5\nallow = [\"write\"]\n", "unknown permission \"write\""),
            ("[[access.rule]]\nuid = 5\n", "access.rule[1].allow: is required"),
            ("[[access.rule]]\nuid = 5\nallow = [\"read\"]\ncolour = \"red\"\n", "access.rule[1].colour: unknown key"),
        ]
        for (index, (text, expected)) in cases.enumerated() {
            try directory.write("c\(index).toml", text)
            let output = try await runProcess(
                usherd,
                [
                    "--config", directory.file("c\(index).toml"), "--socket", directory.file("s.sock"),
                    "--state-directory", directory.file("state"),
                ]
            )
            #expect(output.status == 78)
            #expect(output.stderr.contains(expected), "\(output.stderr)")
        }
    }

    @Test func theDaemonRefusesAStateDirectoryOthersCouldTamperWith() async throws {
        let usherd = try BuiltProducts.path(of: "usherd")
        let directory = try TestDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        #expect(mkdir(state, 0o700) == 0)
        chmod(state, 0o777)
        var output = try await runProcess(usherd, ["--socket", directory.file("s.sock"), "--state-directory", state])
        #expect(output.status != 0)
        #expect(output.stderr.contains("writable by group or others"))
        chmod(state, 0o700)
        #expect(chown(state, 65534, 65534) == 0)
        output = try await runProcess(usherd, ["--socket", directory.file("s.sock"), "--state-directory", state])
        #expect(output.status != 0)
        #expect(output.stderr.contains("owned by uid 65534"))
        #expect(!FileManager.default.fileExists(atPath: directory.file("s.sock")))
    }
}
