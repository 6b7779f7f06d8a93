import ArgumentParser
import UsherClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Usher {
    /// Holds a lease while a command runs, as `systemd-inhibit` holds off a shutdown.
    ///
    /// The lease lives as long as this process's connection to usherd: if `usher` is killed, the lease goes with it.
    /// The connection is opened close-on-exec, so the command does not keep the lease alive after `usher` is gone.
    struct Inhibit: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "inhibit",
            abstract: "Run a command while the seat's active user may not change under it.",
            discussion: """
                Exits with the command's status (128+N when a signal N ended it). \
                Example: usher inhibit --why "card payment" -- ./pay --amount 12
                """
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        @Option(help: "block: changes are refused while it runs; delay: they wait for it (up to leases.max_delay).")
        var mode: LeaseModeArgument = .block

        @Option(help: "Who holds the lease (default: the command's name).")
        var who: String?

        @Option(help: "Why, shown by usher leases and in the inhibited error.")
        var why: String

        @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
        var command: [String] = []

        func validate() throws {
            guard !self.command.isEmpty else { throw ValidationError("Give the command to run after --.") }
        }

        func run() throws {
            let connection = try BlockingConnection(to: self.options.location)
            let lease = try connection.send(
                InhibitRequest(
                    seat: self.seat,
                    mode: self.mode.mode,
                    who: self.who ?? String(self.command[0].split(separator: "/").last ?? "command"),
                    why: self.why
                )
            )
            if self.options.json { Output.json(lease) }
            let status = try Self.runToCompletion(self.command)
            _ = try? connection.send(ReleaseRequest(lease: lease.lease))
            throw ExitCode(status)
        }

        /// Spawns the command (looked up in PATH) with this process's environment and waits for it.
        static func runToCompletion(_ command: [String]) throws -> Int32 {
            var pid: pid_t = 0
            var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
            defer { for argument in argv { free(argument) } }
            let spawned = posix_spawnp(&pid, command[0], nil, nil, &argv, environ)
            guard spawned == 0 else {
                throw CLIError("cannot run \(command[0]): \(String(cString: strerror(spawned)))")
            }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 {
                guard errno == EINTR else { throw CLIError("waiting for \(command[0]) failed") }
            }
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import (they are macros).
            let signal = status & 0x7f
            return signal == 0 ? (status >> 8) & 0xff : 128 + signal
        }
    }

    enum LeaseModeArgument: String, ExpressibleByArgument, CaseIterable {
        case block
        case delay

        var mode: LeaseMode { self == .block ? .block : .delay }
    }
}
