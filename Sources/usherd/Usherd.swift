import Foundation
import UsherDaemon

@main
struct Usherd {
    static func main() async {
        // First of all, before a configuration, a key or a password is in memory: no core dumps, no same-user ptrace.
        if let warning = ProcessHardening.disableCoreDumps() {
            FileHandle.standardError.write(Data("usherd: warning: \(warning)\n".utf8))
        }
        await UsherdCommand.main()
    }
}
