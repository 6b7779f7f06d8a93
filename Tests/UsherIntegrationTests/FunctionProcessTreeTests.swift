import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The authentication function's runs end with every process they started, and with none of another run's: on the
/// real daemon, with hooks that leave processes behind in sessions of their own (`setsid`), where a process-group kill
/// does not reach them.
@Suite(.integrationHangGuard)
struct FunctionProcessTreeTests {
    /// The hook: the payload's `mode` says what it does; every process it leaves behind writes its process ID to
    /// `pids/<name>` first, so the test can look for it afterwards.
    /// - `orphans`: starts a `setsid` grandchild and a double-forked one (its parent exits at once), then with
    ///   `then = "hang"` sleeps past the timeout, else accepts.
    /// - `wait-for`: starts a `setsid` grandchild `mine`, waits until the process in `pids/<other>` is gone, then
    ///   accepts with the name `alive` if `mine` still runs, `dead` otherwise.
    static let script = #"""
        #!/bin/sh
        dir=$(dirname "$0")
        payload=$(cat)
        field() { printf '%s' "$payload" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
        leave() { setsid sh -c "echo \$\$ > '$dir/pids/$1.tmp' && mv '$dir/pids/$1.tmp' '$dir/pids/$1'; exec sleep 300" & }
        wait_for() { i=0; while [ ! -s "$dir/pids/$1" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done; }
        case "$(field mode)" in
        orphans)
            leave "$(field name)-setsid"
            ( leave "$(field name)-orphan" )
            wait_for "$(field name)-setsid"
            wait_for "$(field name)-orphan"
            if [ "$(field then)" = hang ]; then sleep 300; fi
            printf '{"subject":"%s"}\n' "$(field name)" ;;
        wait-for)
            leave mine
            wait_for mine
            wait_for "$(field other)"
            other=$(cat "$dir/pids/$(field other)")
            i=0
            while kill -0 "$other" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
            if kill -0 "$(cat "$dir/pids/mine")" 2>/dev/null; then state=alive; else state=dead; fi
            printf '{"subject":"watcher","name":"%s"}\n' "$state" ;;
        esac
        """#

    static func config(_ directory: TestDirectory, timeout: String) -> String {
        """
        [providers.local]
        type = "local"

        [providers.local.function]
        command = ["\(directory.file("tree.sh"))"]
        timeout = "\(timeout)"
        max_concurrent = 4
        """
    }

    /// A daemon whose function is the script above (in the daemon's own test directory).
    static func withDaemon<T>(timeout: String, _ body: (DaemonProcess) async throws -> T) async throws -> T {
        let daemon = try DaemonProcess()
        try daemon.directory.writeExecutable("tree.sh", Self.script)
        try FileManager.default.createDirectory(
            atPath: daemon.directory.file("pids"),
            withIntermediateDirectories: true
        )
        try daemon.directory.write("usherd.toml", Self.config(daemon.directory, timeout: timeout))
        return try await DaemonProcess.using(daemon) { daemon in
            // Whatever happens, nothing the hooks started outlives the test.
            defer { for pid in Self.recordedPIDs(daemon).values { kill(pid, SIGKILL) } }
            try await daemon.start()
            return try await body(daemon)
        }
    }

    static func login(_ payload: [String: JSONValue]) -> [String: JSONValue] {
        ["credentials": ["type": "function", "payload": .object(payload)]]
    }

    /// The processes the hooks recorded, by name.
    static func recordedPIDs(_ daemon: DaemonProcess) -> [String: pid_t] {
        let directory = daemon.directory.file("pids")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var pids: [String: pid_t] = [:]
        for name in names where !name.hasSuffix(".tmp") {
            let text = (try? String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8)) ?? ""
            if let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) { pids[name] = pid }
        }
        return pids
    }

    /// Whether a process with this ID exists (a zombie counts: it is gone only once it has been reaped).
    static func exists(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }

    /// Waits, up to the hang guard, until none of `pids` exists; returns those that still do.
    static func waitUntilGone(_ pids: [pid_t]) async throws -> [pid_t] {
        let deadline = ContinuousClock.now + hangGuard
        while ContinuousClock.now < deadline {
            let left = pids.filter(Self.exists)
            if left.isEmpty { return [] }
            try await Task.sleep(for: .milliseconds(20))
        }
        return pids.filter(Self.exists)
    }

    @Test func aTimedOutRunIsKilledWithEverythingItStarted() async throws {
        try await Self.withDaemon(timeout: "10s") { daemon in
            let response = try await daemon.connect().call(
                "login",
                Self.login(["mode": "orphans", "name": "slow", "then": "hang"])
            )
            #expect(
                response["error"]?["message"]?.stringValue
                    == "the authentication function did not answer within 10s and was stopped",
                "\(response)"
            )
            let pids = Self.recordedPIDs(daemon)
            #expect(Set(pids.keys) == ["slow-setsid", "slow-orphan"])
            // Gone, and reaped: not a zombie left to anyone.
            #expect(try await Self.waitUntilGone(Array(pids.values)).isEmpty, "still running: \(pids)")
        }
    }

    @Test func aRunThatAnswersTakesWhatItLeftBehindWithIt() async throws {
        try await Self.withDaemon(timeout: "60s") { daemon in
            let result = try await daemon.connect().result(
                "login",
                Self.login(["mode": "orphans", "name": "quick"])
            )
            #expect(result["user"]?["id"] != nil, "\(result)")
            let pids = Self.recordedPIDs(daemon)
            #expect(Set(pids.keys) == ["quick-setsid", "quick-orphan"])
            #expect(try await Self.waitUntilGone(Array(pids.values)).isEmpty, "still running: \(pids)")
        }
    }

    @Test func aRunsEndTakesOnlyItsOwnProcesses() async throws {
        try await Self.withDaemon(timeout: "120s") { daemon in
            // The watcher runs first and keeps running: it waits until the other run's grandchild is gone, then says
            // whether its own grandchild survived that.
            let watcher = try daemon.connect()
            try watcher.send(
                TestJWT.json([
                    "id": 1, "method": "login",
                    "params": .object(Self.login(["mode": "wait-for", "other": "other-setsid"])),
                ])
            )
            let deadline = ContinuousClock.now + hangGuard
            while Self.recordedPIDs(daemon)["mine"] == nil {
                guard ContinuousClock.now < deadline else { throw TestSupportError("the watcher never started") }
                try await Task.sleep(for: .milliseconds(20))
            }
            // Another run ends (answers at once) while the watcher's runs on: its leftovers go, the watcher's stay.
            _ = try await daemon.connect().result("login", Self.login(["mode": "orphans", "name": "other"]))
            let answer = try await watcher.readObject()
            #expect(answer["result"]?["user"]?["name"]?.stringValue == "alive", "\(answer)")
            let pids = Self.recordedPIDs(daemon)
            #expect(try await Self.waitUntilGone(Array(pids.values)).isEmpty, "still running: \(pids)")
        }
    }
}
