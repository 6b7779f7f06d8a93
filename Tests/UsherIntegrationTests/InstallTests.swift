import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// What an installed usher shows an administrator: one version everywhere, start-up errors at error priority in the
/// journal, and units that behave on every supported systemd. (The package itself, on real systemd, is tested by
/// `make test-package`.)
@Suite(.integrationHangGuard)
struct InstallTests {
    /// The VERSION file's text, the one place the version is written.
    static func version() throws -> String {
        let file = SystemdTests.repository.appendingPathComponent("VERSION")
        return try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func bothBinariesAndHelloReportTheVersionFile() async throws {
        let version = try Self.version()
        #expect(!version.isEmpty)
        for program in ["usherd", "usher"] {
            let result = try await runProcess(try BuiltProducts.path(of: program), ["--version"])
            #expect(result.status == 0, "\(program): \(result.stderr)")
            #expect(result.stdout == version + "\n", "\(program) --version printed \(result.stdout)")
        }
        try await DaemonProcess.with { daemon in
            let hello = try await daemon.connect().result("hello")
            #expect(hello["version"]?.stringValue == version)
        }
    }

    /// Runs usherd with stderr appended to a file that `JOURNAL_STREAM` names, as systemd does with the journal.
    static func startWithJournal(
        _ arguments: [String],
        in directory: TestDirectory
    ) async throws -> (
        ProcessOutput, [Substring]
    ) {
        let journal = directory.file("journal")
        #expect(FileManager.default.createFile(atPath: journal, contents: nil))
        var info = stat()
        #expect(stat(journal, &info) == 0)
        let result = try await runProcess(
            "/bin/sh",
            ["-c", "exec \"$0\" \"$@\" 2>>\"$USHER_TEST_JOURNAL\"", try BuiltProducts.path(of: "usherd")] + arguments
                + ["--socket", directory.file("usher.sock"), "--state-directory", directory.file("state")],
            environment: SystemdTests.environment([
                "JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)", "USHER_TEST_JOURNAL": journal,
            ])
        )
        let text = try String(contentsOfFile: journal, encoding: .utf8)
        return (result, text.split(separator: "\n"))
    }

    /// systemd 252 showed `status=78/CONFIG` under `journalctl -p err` but filed the reason at info: every line of a
    /// start-up error carries `<3>`.
    @Test func startUpErrorsReachTheJournalAtErrorPriority() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        try directory.write("usherd.toml", "[daemon]\nno_such_key = 1\n")
        let (configuration, lines) = try await Self.startWithJournal(
            ["--config", directory.file("usherd.toml")],
            in: directory
        )
        #expect(configuration.status == 78)
        #expect(lines.contains { $0.contains("no_such_key") }, "\(lines)")
        #expect(lines.allSatisfy { $0.hasPrefix("<3>") }, "\(lines)")

        let other = try TestDirectory()
        defer { other.remove() }
        let (commandLine, usage) = try await Self.startWithJournal(["--log-level", "loud"], in: other)
        #expect(commandLine.status == 64)
        #expect(usage.contains { $0.contains("--log-level must be one of") }, "\(usage)")
        #expect(usage.allSatisfy { $0.hasPrefix("<3>") }, "\(usage)")
    }

    /// The `[Service]` settings of a unit file, as `key=value` lines.
    static func settings(of unit: String) throws -> [Substring] {
        let text = try String(
            contentsOf: SystemdTests.repository.appendingPathComponent(unit),
            encoding: .utf8
        )
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("=") }
    }

    /// A configuration error (exit 78) is not cured by a restart: both units say so, or systemd restarts in a loop.
    @Test func neitherUnitRestartsAfterAConfigurationError() throws {
        for unit in ["systemd/usherd.service", "systemd/user/usherd.service"] {
            let prevented = try Self.settings(of: unit).filter { $0.hasPrefix("RestartPreventExitStatus=") }
                .flatMap { $0.dropFirst("RestartPreventExitStatus=".count).split(separator: " ") }
            #expect(prevented.contains("78"), "\(unit): \(prevented)")
        }
    }

    /// systemd before 254 maps `StateDirectory=` of a user unit to `$XDG_CONFIG_HOME` (~/.config/usher, beside the
    /// configuration). The user unit leaves the state directory to usherd, which uses `$XDG_STATE_HOME/usher`
    /// (~/.local/state/usher) whatever the systemd version; `make test-package` checks it on real systemd.
    @Test func theUserUnitLeavesTheStateDirectoryToUsherd() throws {
        let settings = try Self.settings(of: "systemd/user/usherd.service")
        #expect(!settings.contains { $0.hasPrefix("StateDirectory") }, "\(settings)")
        #expect(!settings.contains { $0.contains("--state-directory") || $0.contains("%S") }, "\(settings)")
    }
}
