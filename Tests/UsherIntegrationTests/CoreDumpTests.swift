import Foundation
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

    /// The control: an ordinary process of the same user is readable this way, so that a refusal for the daemon means
    /// "not dumpable". Where it is not (Yama's ptrace_scope >= 1 forbids it even for dumpable processes), there is
    /// nothing to compare against, and the test is skipped, and reported so.
    static func sameUserCanOpenAnOrdinaryProcesssMemory() async throws -> Bool {
        let sleep = Self.withoutPtrace + ["/bin/sleep", "60"]
        let control = try SpawnedProcess(sleep[0], Array(sleep.dropFirst()))
        defer { control.signal(SIGKILL) }
        return try await Self.sameUserCanOpenMemory(of: control.processIdentifier)
    }

    @Test(
        .enabled(
            if: geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "run as root, this test needs /usr/bin/setpriv (util-linux) to drop CAP_SYS_PTRACE"
        ),
        .enabled("this kernel must let a process open a same-user process's memory (Yama ptrace_scope 0)") {
            try await CoreDumpTests.sameUserCanOpenAnOrdinaryProcesssMemory()
        }
    )
    func theDaemonIsNotDumpableAndHasNoCoreLimit() async throws {

        try await DaemonProcess.using(try DaemonProcess()) { daemon in
            try await daemon.start(wrapper: Self.withoutPtrace)
            #expect(
                try await !Self.sameUserCanOpenMemory(of: daemon.pid),
                "another process of usherd's user can read its memory"
            )
            let limits = try String(contentsOfFile: "/proc/\(daemon.pid)/limits", encoding: .utf8)
            let core = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") })
            let values = core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2)
            #expect(Array(values) == ["0", "0"], "\(core)")
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
