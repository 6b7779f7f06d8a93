import ArgumentParser
import Subprocess
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
    struct Inhibit: AsyncParsableCommand {
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

        func run() async throws {
            let connection = try BlockingConnection(to: self.options.location)
            let answer = try connection.send(
                InhibitRequest(
                    seat: self.seat,
                    mode: self.mode.mode,
                    who: self.who ?? String(self.command[0].split(separator: "/").last ?? "command"),
                    why: self.why
                )
            )
            // The first reply of `inhibit` names the lease (the later ones carry its events).
            guard let id = answer.lease, let seat = answer.seat else {
                throw CLIError("usherd's answer to inhibit named no lease")
            }
            let lease = Lease(lease: id, seat: seat)
            if self.options.json { Output.json(answer) }
            var watch = LeaseWatch(connection: connection, lease: lease)
            let status = try await Self.runToCompletion(self.command, watching: &watch)
            watch.release()
            guard let lost = watch.lost else { throw ExitCode(status) }
            Output.error(
                "the lease \(Terminal.escaped(lease.lease)) on seat \(Terminal.escaped(lease.seat)) was lost while the command "
                    + "ran: \(lost)"
            )
            // The command ran without the protection it asked for: never a success.
            throw ExitCode(status == 0 ? 1 : status)
        }

        /// Runs the command (looked up in PATH) with this process's environment and standard streams through
        /// swift-subprocess and waits for it, watching the lease's connection meanwhile, so that a lease lost while the
        /// command runs is reported at once. Its status, 128+N when a signal N ended it.
        static func runToCompletion(_ command: [String], watching watch: inout LeaseWatch) async throws -> Int32 {
            let result = try await Spawn.starting(command) {
                try await Subprocess.run(
                    Spawn.executable(command[0]),
                    arguments: Arguments(Array(command.dropFirst())),
                    input: .currentStandardInput,
                    output: .currentStandardOutput,
                    error: .currentStandardError
                ) { execution in
                    CoreDumps.started()
                    // swift-subprocess's pidfd for the command, readable once it has exited: polled beside the
                    // connection (blocking this task, the CLI's only one, until then). Without one (a kernel before
                    // 5.4) the lease is checked once the command is done.
                    let exited = execution.processIdentifier.processDescriptor
                    if exited >= 0 { watch.watch(until: exited) }
                }
            }
            switch result.terminationStatus {
            case .exited(let code): return code
            case .signaled(let signal): return 128 + signal
            }
        }
    }

    /// A lease held: its id and its seat.
    struct Lease {
        var lease: String
        var seat: String
    }

    /// What happens to a lease while its command runs: usherd tells its holder when a forced change breaks it, and
    /// the lease ends with the connection (the daemon stopped, or closed it).
    struct LeaseWatch {
        let connection: BlockingConnection
        let lease: Lease
        /// Why the lease stopped holding, once it did.
        private(set) var lost: String?

        init(connection: BlockingConnection, lease: Lease) {
            self.connection = connection
            self.lease = lease
        }

        /// Reads what usherd sends on the lease's connection until `exited` (a pidfd) is readable.
        mutating func watch(until exited: Int32) {
            while true {
                var descriptors = [
                    pollfd(fd: exited, events: Int16(POLLIN), revents: 0),
                    pollfd(
                        fd: self.lost == nil ? self.connection.fileDescriptor : -1,
                        events: Int16(POLLIN),
                        revents: 0
                    ),
                ]
                if self.lost == nil, self.connection.hasBufferedLine {
                    self.readEvent()
                    continue
                }
                let ready = poll(&descriptors, 2, -1)
                if ready < 0 {
                    if errno == EINTR { continue }
                    return
                }
                if descriptors[1].revents != 0 { self.readEvent() }
                if descriptors[0].revents != 0 { return }
            }
        }

        private mutating func readEvent() {
            do {
                let event = try self.connection.nextEvent()
                if case .leaseBroken(let id, let reason) = event.payload, id == self.lease.lease {
                    self.report("broken (\(Terminal.escaped(reason)))")
                }
            } catch {
                self.report("usherd closed the connection that held it")
            }
        }

        private mutating func report(_ reason: String) {
            guard self.lost == nil else { return }
            self.lost = reason
            // Said as soon as it happens, while the command still runs.
            Output.error("the lease \(Terminal.escaped(self.lease.lease)) was lost: \(reason)")
        }

        /// Releases the lease; a lease that is gone by now was lost.
        mutating func release() {
            if self.lost == nil, self.connection.hasBufferedLine { self.readEvent() }
            do {
                _ = try self.connection.send(ReleaseRequest(lease: self.lease.lease))
            } catch {
                if self.lost == nil { self.lost = "usherd no longer held it when the command ended" }
            }
        }
    }

    enum LeaseModeArgument: String, ExpressibleByArgument, CaseIterable {
        case block
        case delay

        var mode: LeaseMode { self == .block ? .block : .delay }
    }
}
