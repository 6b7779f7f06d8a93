import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// usherd as a systemd service: the unit files, the notification protocol, socket activation and the journal format,
/// checked with systemd's own tools and a stand-in notification socket.
@Suite(.integrationHangGuard)
struct SystemdTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The units as `make install` writes them, with `ExecStart=` pointed at the built binary.
    static func installedUnits(in directory: TestDirectory, from subdirectory: String = "systemd") throws -> [String] {
        let bin = URL(fileURLWithPath: try BuiltProducts.path(of: "usherd")).deletingLastPathComponent().path
        var paths: [String] = []
        for name in ["usherd.service", "usherd.socket", "usherd-varlink.socket"] {
            let text = try String(
                contentsOf: Self.repository.appendingPathComponent("\(subdirectory)/\(name)"),
                encoding: .utf8
            )
            let installed = text.replacingOccurrences(of: "@BINDIR@", with: bin)
                .replacingOccurrences(of: "@DOCDIR@", with: "/usr/local/share/doc/usher")
            try directory.write(name, installed)
            paths.append(directory.file(name))
        }
        return paths
    }

    @Test func unitFilesPassSystemdAnalyzeVerify() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let units = try Self.installedUnits(in: directory)
        let verify = try await runProcess("/usr/bin/systemd-analyze", ["verify", "--recursive-errors=yes"] + units)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(!verify.stderr.contains("usherd."), "\(verify.stderr)")
    }

    @Test func theServiceIsHardenedToAnExposureOfAtMostTwo() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let service = try Self.installedUnits(in: directory)[0]
        let security = try await runProcess(
            "/usr/bin/systemd-analyze",
            ["security", "--offline=yes", "--threshold=20", service]
        )
        #expect(security.status == 0, "\(security.stdout)")
        let summary = try #require(
            security.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") }
        )
        let exposure = try #require(
            summary.split(separator: " ").compactMap { Double($0) }.first,
            "no exposure value in: \(summary)"
        )
        #expect(exposure <= 2.0)
    }

    @Test func userUnitsPassVerifyToo() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let units = try Self.installedUnits(in: directory, from: "systemd/user")
        let verify = try await runProcess("/usr/bin/systemd-analyze", ["verify", "--recursive-errors=yes"] + units)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }

    static func environment(_ extra: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM"] {
            environment.removeValue(forKey: key)
        }
        environment.merge(extra) { _, new in new }
        return environment
    }

    @Test func notificationsFromStartThroughReloadToStop() async throws {
        try await DaemonProcess.using(try DaemonProcess(config: "[daemon]\nlog_level = \"info\"\n")) { daemon in
            let notify = try NotifyListener(path: daemon.directory.file("notify"))
            // WATCHDOG_PID must name the daemon itself: the shell's pid is the daemon's after exec.
            try await daemon.start(
                environment: Self.environment(["NOTIFY_SOCKET": notify.address, "WATCHDOG_USEC": "400000"]),
                wrapper: ["/bin/sh", "-c", "WATCHDOG_PID=$$ exec \"$0\" \"$@\""],
                waitForSocket: false
            )
            // READY=1 comes only once the socket accepts connections, with a status a person can read.
            let (ready, before) = try await notify.waitFor("READY=1")
            #expect(try await daemon.connect().result("hello")["server"] == "usherd")
            #expect(ready.contains("STATUS=no user logged in"))
            #expect(before.contains { $0.contains("EXTEND_TIMEOUT_USEC=") })

            // The status follows the users.
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "joe@example.com", "password": "secret123"])
            _ = try await client.result("login", SessionRulesTests.emailLogin("joe@example.com"))
            let status = try await notify.waitFor("STATUS=1 user logged in")
            #expect(status.match.contains("STATUS=1 user logged in, active: joe@example.com"))

            // The watchdog is pinged at half its interval (200 ms here): five a second. Pings queue on the socket,
            // so counting what arrived between two instants measures the daemon's rate even if this test runs late.
            // Only the upper bound is exact (a daemon never pings faster than that); a daemon starved of CPU by a busy
            // machine pings less often, so the lower bound asks only that it keeps pinging at all.
            func drainPings() async throws -> Int {
                var pings = 0
                while let message = try await notify.next(timeout: .milliseconds(1)) {
                    if message == "WATCHDOG=1" { pings += 1 }
                }
                return pings
            }
            _ = try await drainPings()
            let windowStart = ContinuousClock.now
            try await Task.sleep(for: .seconds(2))
            let pings = try await drainPings()
            let seconds =
                Double((ContinuousClock.now - windowStart).components.attoseconds) / 1e18
                + Double((ContinuousClock.now - windowStart).components.seconds)
            let rate = Double(pings) / seconds
            #expect(pings >= 1 && rate <= 7.5, "\(pings) pings in \(seconds) s")

            // SIGHUP: RELOADING=1 with the monotonic time, then READY=1.
            kill(daemon.pid, SIGHUP)
            let reloading = try await notify.waitFor("RELOADING=1")
            let monotonic = reloading.match.split(separator: "\n").first { $0.hasPrefix("MONOTONIC_USEC=") }
            #expect(UInt64(monotonic?.dropFirst("MONOTONIC_USEC=".count) ?? "") ?? 0 > 0)
            _ = try await notify.waitFor("READY=1")

            // A broken configuration on reload is logged, the old one kept, and the daemon keeps serving.
            try daemon.directory.write("usherd.toml", "[daemon]\nno_such_key = 1\n")
            kill(daemon.pid, SIGHUP)
            _ = try await notify.waitFor("RELOADING=1")
            _ = try await notify.waitFor("READY=1")
            #expect(daemon.isRunning)
            #expect(try await client.result("current_user")["user"]?["email"] == "joe@example.com")
            #expect(daemon.log.contains("reload failed"))
            #expect(daemon.log.contains("daemon.no_such_key"))

            // SIGTERM: STOPPING=1 and a clean exit.
            kill(daemon.pid, SIGTERM)
            _ = try await notify.waitFor("STOPPING=1")
            #expect(try await daemon.stop() == 0)
        }
    }

    @Test func reloadAppliesProvidersAndLimitsLive() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            #expect(try await client.result("providers")["providers"]?.arrayValue?.count == 1)
            try daemon.directory.write(
                "usherd.toml",
                "[providers.local]\ntype = \"local\"\n[providers.kiosk]\ntype = \"local\"\nallow_registration = false\n"
            )
            kill(daemon.pid, SIGHUP)
            var names: [String] = []
            try await eventually {
                names =
                    try await client.result("providers")["providers"]?.arrayValue?.compactMap {
                        $0["name"]?.stringValue
                    }
                    ?? []
                return names.count == 2
            }
            #expect(names == ["kiosk", "local"])
            #expect(
                try await client.errorCode(
                    "register",
                    ["provider": "kiosk", "email": "a@b.c", "password": "secret123"]
                )
                    == "registration_disabled"
            )
        }
    }

    @Test func theWatchdogIsNotPingedForAnotherProcess() async throws {
        try await DaemonProcess.using(try DaemonProcess()) { daemon in
            let notify = try NotifyListener(
                path: daemon.directory.file("notify"),
                abstractName: "usher-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            )
            // An abstract notification socket (@name) works too; WATCHDOG_PID of another process disables pings.
            try await daemon.start(
                environment: Self.environment([
                    "NOTIFY_SOCKET": notify.address, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1",
                ]),
                waitForSocket: false
            )
            _ = try await notify.waitFor("READY=1")
            var pings = 0
            while let message = try await notify.next(timeout: .milliseconds(600)) {
                if message == "WATCHDOG=1" { pings += 1 }
            }
            #expect(pings == 0)
            #expect(try await daemon.stop() == 0)
        }
    }

    @Test func socketActivationServesTheFirstConnection() async throws {
        try await DaemonProcess.using(try DaemonProcess()) { daemon in
            try await daemon.start(
                // Configured for another path than the one it is handed: the handed socket is what it serves and logs.
                extraArguments: ["--socket", daemon.directory.file("configured.sock")],
                environment: Self.environment([:]),
                wrapper: ["/usr/bin/systemd-socket-activate", "-l", daemon.socketPath, "--fdname=usher"],
                waitForSocket: false
            )
            // systemd-socket-activate listens first; usherd starts only when the first client connects.
            try await eventually { FileManager.default.fileExists(atPath: daemon.socketPath) }
            #expect(!daemon.log.contains("listening"))
            let client = try daemon.connect()
            #expect(try await client.result("hello")["server"] == "usherd")
            #expect(daemon.log.contains("socket activation"))
            // The log names the socket it was handed, not the default path.
            #expect(daemon.log.contains("socket=\(daemon.socketPath)"), "\(daemon.log)")
            // The socket belongs to the activator: usherd leaves it in place when it stops.
            #expect(try await daemon.stop() == 0)
            #expect(FileManager.default.fileExists(atPath: daemon.socketPath))
        }
    }

    @Test func socketActivationHandsTheVarlinkSocketByItsName() async throws {
        try await DaemonProcess.using(try DaemonProcess()) { daemon in
            try await daemon.start(
                environment: Self.environment([:]),
                wrapper: [
                    "/usr/bin/systemd-socket-activate", "-l", daemon.socketPath, "-l", daemon.varlinkPath,
                    "--fdname=usher:varlink",
                ],
                waitForSocket: false
            )
            try await eventually { FileManager.default.fileExists(atPath: daemon.varlinkPath) }
            // The first connection is on the Varlink socket: it starts the daemon, which serves it as Varlink.
            let varlink = try LineConnection(path: daemon.varlinkPath)
            let hello = try await varlink.varlink("io.usher.Session.Hello")
            #expect(hello["parameters"]?["server"] == "usherd")
            #expect(
                daemon.log.contains(
                    "Varlink interface io.usher.Session listening (socket activation) socket=\(daemon.varlinkPath)"
                )
            )
            // And the other descriptor, named usher, is the main socket, speaking lines.
            let lines = try daemon.connect()
            #expect(try await lines.result("hello")["server"] == "usherd")
            #expect(daemon.log.contains("socket activation"))
            #expect(try await daemon.stop() == 0)
        }
    }

    @Test func journalFormatAndNoSecretsInTheLog() async throws {
        try await DaemonProcess.using(try DaemonProcess()) { daemon in
            // Make stderr "the journal": JOURNAL_STREAM names the log file's device and inode.
            #expect(FileManager.default.createFile(atPath: daemon.logPath, contents: nil))
            var info = stat()
            #expect(stat(daemon.logPath, &info) == 0)
            try await daemon.start(environment: Self.environment(["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]))

            let password = "pa55-Never-In-Logs"
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "joe@example.com", "password": .string(password)])
            _ = try await client.result("login", SessionRulesTests.emailLogin("joe@example.com", password))
            let token = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            let key = try #require(try await client.result("create_api_key", ["name": "ci"])["key"]?.stringValue)
            _ = try await client.result("refresh")
            let refreshed = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            _ = try await client.errorCode("login", SessionRulesTests.emailLogin("joe@example.com", password + "x"))
            _ = try await client.result("logout")
            #expect(try await daemon.stop() == 0)

            let lines = daemon.log.split(separator: "\n")
            #expect(lines.count > 3)
            // Every record is one line that starts with its syslog priority.
            #expect(
                lines.allSatisfy {
                    $0.first == "<" && "234567".contains($0.dropFirst().first ?? "x") && $0.dropFirst(2).first == ">"
                }
            )
            #expect(lines.contains { $0.hasPrefix("<6>") && $0.contains("login") && $0.contains("user.id=") })
            #expect(lines.contains { $0.hasPrefix("<7>") })
            for secret in [password, token, refreshed, key] {
                #expect(!daemon.log.contains(secret))
            }
        }
    }
}
