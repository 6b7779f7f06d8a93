import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Where a client can be put into a systemd unit on this machine.
enum UnitPlacement {
    static var systemdRuns: Bool { FileManager.default.fileExists(atPath: "/run/systemd/system") }

    /// The cgroup hierarchies libsystemd may read a process's unit from, when systemd does not run: the unified one,
    /// and systemd's named one on a hybrid or legacy layout.
    static var hierarchies: [String] {
        if FileManager.default.fileExists(atPath: "/sys/fs/cgroup/cgroup.controllers") { return ["/sys/fs/cgroup"] }
        return ["/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"].filter {
            FileManager.default.fileExists(atPath: "\($0)/cgroup.procs")
        }
    }

    static var unavailableReason: String? {
        if let reason = OtherUser.unavailableReason { return reason }
        if Self.systemdRuns { return nil }
        guard !Self.hierarchies.isEmpty, access(Self.hierarchies[0], W_OK) == 0 else {
            return "systemd does not run this machine, and its control groups cannot be written"
        }
        return nil
    }
}

/// `unit` and `user_unit` conditions: the daemon asks libsystemd (`sd_pid_get_unit`, `sd_pid_get_user_unit`) which
/// units a peer belongs to, which it reads from the peer's control group.
///
/// Where systemd runs the machine, the client runs in a transient unit (`systemd-run`, as root). Where it does not
/// (a container whose init is not systemd), no transient unit can exist; the test then puts the client into control
/// groups named as systemd names a unit's (`system.slice/NAME.service`, and a user service's under
/// `user@UID.service`), which is what libsystemd reads either way. Both need root.
@Suite(
    .integrationHangGuard,
    .enabled(
        if: UnitPlacement.unavailableReason == nil,
        "needs root, and systemd running the machine or control groups the test may create"
    )
)
struct ProgramUnitTests {
    /// Runs `program whoami --program --json` as nobody in a unit: the system unit `unit`, or (`userUnit`) a unit of
    /// nobody's service manager.
    static func helloInUnit(
        _ program: String,
        unit: String,
        userUnit: Bool,
        _ daemon: DaemonProcess
    ) async throws -> JSONValue {
        let arguments = [program, "whoami", "--program", "--json", "--socket", daemon.socketPath]
        let output: ProcessOutput
        if UnitPlacement.systemdRuns {
            try #require(!userUnit, "a transient unit of another user's service manager is not made here")
            output = try await runProcess(
                "/usr/bin/systemd-run",
                ["--wait", "--pipe", "--quiet", "--unit=\(unit)", "-p", "User=nobody", "-p", "Group=nogroup"]
                    + arguments
            )
        } else {
            let path =
                userUnit
                ? "user.slice/user-65534.slice/user@65534.service/app.slice/\(unit)" : "system.slice/\(unit)"
            let groups = UnitPlacement.hierarchies.map { "\($0)/\(path)" }
            for group in groups {
                try FileManager.default.createDirectory(atPath: group, withIntermediateDirectories: true)
            }
            defer {
                // The groups, and the parents made for them (a parent still in use is not empty, and stays).
                for hierarchy in UnitPlacement.hierarchies {
                    var components = path.split(separator: "/")
                    while !components.isEmpty {
                        rmdir("\(hierarchy)/\(components.joined(separator: "/"))")
                        components.removeLast()
                    }
                }
            }
            // The shell moves itself into the groups, then becomes the client (as nobody): it connects from there.
            let script =
                "for g in \"$@\"; do echo $$ > \"$g/cgroup.procs\" || exit 1; done; exec "
                + "/usr/bin/setpriv --reuid=nobody --regid=nogroup --clear-groups "
                + arguments.map { "'\($0)'" }.joined(separator: " ")
            output = try await runProcess("/bin/sh", ["-c", script, "sh"] + groups)
        }
        #expect(output.status == 0, "\(output.stderr)")
        return try JSONDecoder().decode(JSONValue.self, from: Data(output.stdout.utf8))
    }

    @Test func aUnitRuleMatchesOnlyTheProgramsOfThatUnit() async throws {
        let unit = "usher-test-\(getpid())-kiosk.service"
        let userUnit = "usher-test-\(getpid())-player.service"
        let config =
            "[[access.rule]]\nuid = 65534\nunit = \"\(unit)\"\nallow = [\"read\", \"token\"]\n"
            + "[[access.rule]]\nuid = 65534\nuser_unit = \"\(userUnit)\"\nallow = [\"read\"]\n"
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(config)) { daemon in
            try await daemon.start()
            let program = try ProgramIdentificationTests.programs(in: daemon, ["client"])[0]

            let inUnit = try await Self.helloInUnit(program, unit: unit, userUnit: false, daemon)
            #expect(inUnit["program"]?["unit"] == .string(unit))
            #expect(inUnit["permissions"] == ["read", "token"])

            // The same program outside any unit of the rules.
            let outside = try await ProgramIdentificationTests.hello(program, daemon)
            #expect(outside["program"]?["unit"] != .string(unit))
            #expect(outside["permissions"] == [])

            if !UnitPlacement.systemdRuns {
                let inUserUnit = try await Self.helloInUnit(program, unit: userUnit, userUnit: true, daemon)
                #expect(inUserUnit["program"]?["unit"] == "user@65534.service")
                #expect(inUserUnit["program"]?["user_unit"] == .string(userUnit))
                #expect(inUserUnit["permissions"] == ["read"])
            }
        }
    }
}
