import UsherDaemon

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@main
struct Usherd {
    static func main() async {
        // First of all, before a configuration, a key or a password is in memory: no core dumps, no same-user ptrace.
        if let warning = ProcessHardening.disableCoreDumps() {
            StartupMessage.report("usherd: warning: \(warning)", level: .warning)
        }
        // Not UsherdCommand.main(): its errors would reach the journal at info priority (see StartupMessage).
        await UsherdCommand.mainReportingErrorsAtErrorPriority()
    }
}
