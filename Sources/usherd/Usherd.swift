import UsherCLI
import UsherDaemon

@main
struct Usherd {
    static func main() async {
        // One file is both programs, as systemd-udevd is udevadm: the package installs `usher` as a hard link to
        // usherd, so that a device stores the Swift runtime and the libraries both use once. The daemon under its own
        // name, the CLI under any other (`usher`, `git-credential-usher`): decided before anything of either runs.
        if !Self.isDaemonName(CommandLine.arguments.first) {
            await UsherCommandLine.main()
            return
        }
        // First of all, before a configuration, a key or a password is in memory: no core dumps, no same-user ptrace.
        if let warning = ProcessHardening.disableCoreDumps() {
            StartupMessage.report("usherd: warning: \(warning)", level: .warning)
        }
        // Not UsherdCommand.main(): its errors would reach the journal at info priority (see StartupMessage).
        await UsherdCommand.mainReportingErrorsAtErrorPriority()
    }

    /// Whether `argv0` (the name the program was run by) names the daemon: `usherd` in any directory, or no name at
    /// all (an `execve` with an empty argv), as before usherd was the CLI too.
    static func isDaemonName(_ argv0: String?) -> Bool {
        guard let argv0, !argv0.isEmpty else { return true }
        return argv0.split(separator: "/", omittingEmptySubsequences: true).last == "usherd"
    }
}
