import Foundation
import Synchronization
import Testing
import UsherProtocol
import UsherTestSupport

/// The daemon's memory stays out of core dumps and out of reach of other processes of its user.
@Suite(.integrationHangGuard)
struct CoreDumpTests {
    /// Run as root, every process of this test drops `CAP_SYS_PTRACE` (which overrides the kernel's checks) from its
    /// bounding set, so that the daemon, the control process and the reader hold the same capabilities and differ only
    /// in whether they are dumpable.
    static let withoutPtrace: [String] = geteuid() == 0 ? ["/usr/bin/setpriv", "--bounding-set=-sys_ptrace"] : []

    /// Whether a process of the same user and capabilities can open `/proc/PID/mem` of `pid`, that is read its memory:
    /// the kernel allows that only when `pid` is dumpable (`PR_SET_DUMPABLE`). (`dd ... count=0` opens and reads
    /// nothing.)
    static func sameUserCanOpenMemory(of pid: Int32) async throws -> Bool {
        let command = Self.withoutPtrace + ["/bin/dd", "if=/proc/\(pid)/mem", "of=/dev/null", "bs=1", "count=0"]
        let read = try await runProcess(command[0], Array(command.dropFirst()))
        return read.status == 0
    }

    /// Yama's `ptrace_scope` (`/proc/sys/kernel/yama/ptrace_scope`), nil on a kernel without Yama. At 1 or more Yama
    /// forbids opening another process's memory even when that process is dumpable: the test then has nothing to
    /// compare against, and is skipped with that reason. It is a setting of the machine, the same on every run.
    static let yamaPtraceScope: Int? =
        (try? String(
            contentsOfFile: "/proc/sys/kernel/yama/ptrace_scope",
            encoding: .utf8
        )).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }

    /// Whether `pid`'s permitted capabilities include `CAP_SYS_PTRACE` (bit 19 of `CapPrm` in `/proc/PID/status`).
    static func holdsPtrace(_ pid: Int32) throws -> Bool {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("CapPrm:") })
        let mask = try #require(UInt64(line.dropFirst("CapPrm:".count).trimmingCharacters(in: .whitespaces), radix: 16))
        return mask & (1 << 19) != 0
    }

    /// The control: an ordinary process of the same user must be readable this way, so that a refusal for the daemon
    /// means "not dumpable".
    ///
    /// Read only once it is `sleep` without `CAP_SYS_PTRACE`: until `setpriv` has executed it, the control still holds
    /// every capability, and the kernel refuses a reader whose capabilities are not a superset of its target's. (Read
    /// sooner, on a busy machine, the control was refused and the test skipped "for Yama" on a kernel without Yama.)
    static func sameUserCanOpenAnOrdinaryProcesssMemory() async throws -> Bool {
        let sleep = Self.withoutPtrace + ["/bin/sleep", "60"]
        let control = try SpawnedProcess(sleep[0], Array(sleep.dropFirst()))
        defer { control.signal(SIGKILL) }
        if !Self.withoutPtrace.isEmpty {
            try await eventually { try !Self.holdsPtrace(control.processIdentifier) }
        }
        return try await Self.sameUserCanOpenMemory(of: control.processIdentifier)
    }

    @Test(
        .enabled(
            if: geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "run as root, this test needs /usr/bin/setpriv (util-linux) to drop CAP_SYS_PTRACE"
        ),
        .disabled(
            if: (CoreDumpTests.yamaPtraceScope ?? 0) > 0,
            "Yama's ptrace_scope is above 0 here: no process may open a same-user process's memory, dumpable or not"
        )
    )
    func theDaemonIsNotDumpableAndHasNoCoreLimit() async throws {
        try #require(
            try await Self.sameUserCanOpenAnOrdinaryProcesssMemory(),
            "an ordinary process of the same user cannot be read either: nothing to compare the daemon with"
        )
        try await DaemonProcess.using(try DaemonProcess()) { daemon in
            try await daemon.start(wrapper: Self.withoutPtrace)
            #expect(
                try await !Self.sameUserCanOpenMemory(of: daemon.pid),
                "another process of usherd's user can read its memory"
            )
            let limits = try String(contentsOfFile: "/proc/\(daemon.pid)/limits", encoding: .utf8)
            #expect(try Self.coreLimits(in: limits) == ["0", "0"], "\(limits)")
        }
    }

    /// The soft and hard core file size limits in the text of a `/proc/PID/limits` (or its line), as printed there.
    static func coreLimits(in limits: some StringProtocol) throws -> [String] {
        let core = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") })
        let fields = String(core).split(separator: " ", omittingEmptySubsequences: true)
        return fields.dropFirst(4).prefix(2).map(String.init)
    }

    /// The CLI reads passwords and prints tokens: it runs with its soft core limit at 0, and the programs it starts
    /// (`usher inhibit`'s command, `usher exec`'s) get the limit it was started with.
    @Test func theCLIWritesNoCoreFilesButTheProgramsItStartsMay() async throws {
        let ours = try Self.coreLimits(in: try String(contentsOfFile: "/proc/self/limits", encoding: .utf8))
        let hard = ours[1]
        try #require(hard != "0", "the hard core file size limit is 0 here: no limit to give back to compare with")
        try await DaemonProcess.with { daemon in
            try await CLIScriptingTests.logIn(daemon, "joe@example.com")
            var environment = ProcessInfo.processInfo.environment
            environment["USHER_SOCKET"] = daemon.socketPath
            // usher starts with its soft limit at the hard limit, as after `ulimit -c unlimited`.
            let raised = [
                "-c", #"ulimit -S -c "$(ulimit -H -c)" && exec "$0" "$@""#, try BuiltProducts.path(of: "usher"),
            ]
            let report = #"for pid in "$@"; do grep "^Max core file size" /proc/$pid/limits; done"#

            // usher watch, once it prints events (and could have read a password before): 0 from its start.
            let output = try ProcessPipe()
            let printed = Mutex(false)
            output.reading.readabilityHandler = { handle in
                if !handle.availableData.isEmpty { printed.withLock { $0 = true } }
            }
            let watch = try SpawnedProcess(
                "/bin/sh",
                raised + ["watch"],
                environment: environment,
                stdout: .descriptor(output.writing.fileDescriptor)
            )
            try output.writing.close()
            defer { watch.signal(SIGKILL) }
            let client = try daemon.connect()
            defer { client.close() }
            try await eventually {
                _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
                _ = try await client.result("logout")
                return printed.withLock { $0 }
            }
            let watching = try String(contentsOfFile: "/proc/\(watch.processIdentifier)/limits", encoding: .utf8)
            #expect(try Self.coreLimits(in: watching) == ["0", hard], "usher watch may write a core file")
            output.reading.readabilityHandler = nil

            // usher inhibit's command reads its own limits, then its parent's (usher's) once usher has turned core
            // files off again: usher raised its limit for the spawn and lowers it when posix_spawn returns, by which
            // time the command may already be running. (Were that never to happen, the hang guard would end it.)
            let waitForUsher = #"until grep -Eq "^Max core file size +0 " /proc/$PPID/limits; do :; done; "#
            let inhibit = try await runProcess(
                "/bin/sh",
                raised + [
                    "inhibit", "--why", "core limits", "--",
                    "/bin/sh", "-c", #"set -- $$; "# + report + "; " + waitForUsher + #"set -- $PPID; "# + report,
                ],
                environment: environment
            )
            #expect(inhibit.status == 0, "\(inhibit.stderr)")
            let lines = inhibit.stdout.split(separator: "\n")
            try #require(lines.count == 2, "\(inhibit.stdout)")
            #expect(try Self.coreLimits(in: lines[0]) == [hard, hard], "usher's command lost its core limit")
            #expect(try Self.coreLimits(in: lines[1]) == ["0", hard], "usher itself may write a core file")

            // usher exec becomes its command, which has the limit usher was started with.
            let exec = try await runProcess(
                "/bin/sh",
                raised + ["exec", "--", "/bin/sh", "-c", #"set -- $$; "# + report],
                environment: environment
            )
            #expect(exec.status == 0, "\(exec.stderr)")
            #expect(try Self.coreLimits(in: exec.stdout) == [hard, hard], "\(exec.stdout)")
        }
    }

    @Test(arguments: ["systemd/usherd.service", "systemd/user/usherd.service"])
    func theUnitsTurnCoreDumpsOff(unit: String) throws {
        let text = try String(contentsOf: SystemdTests.repository.appendingPathComponent(unit), encoding: .utf8)
        let service = try #require(text.components(separatedBy: "[Service]").dropFirst().first)
        let section = service.components(separatedBy: "\n[").first ?? service
        #expect(section.split(separator: "\n").contains("LimitCORE=0"))
    }
}
