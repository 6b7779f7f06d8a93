import ArgumentParser
import UsherClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@main
struct Usher: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usher",
        abstract: "Talk to usherd: the users logged in on this device, their tokens and API keys.",
        discussion: """
            The daemon's socket is --socket, else $USHER_SOCKET, else $XDG_RUNTIME_DIR/usher/usher.sock when it \
            exists (not for root), else /run/usher/usher.sock.

            Exit codes: 0 success, 1 the daemon answered with an error, 2 usage error, 3 usherd cannot be reached.
            """,
        subcommands: [
            Status.self, WhoAmI.self, Users.self, Providers.self, Register.self, Login.self, Switch.self,
            Logout.self, Remove.self, Token.self, Refresh.self, APIKey.self, Watch.self, Call.self,
            Seats.self, Inhibit.self, Leases.self,
        ]
    )

    /// The exit codes scripts can rely on.
    enum Exit {
        static let success: Int32 = 0
        /// The daemon answered with an error (or the CLI failed on its own).
        static let failure: Int32 = 1
        /// The command line is wrong.
        static let usage: Int32 = 2
        /// The daemon cannot be reached.
        static let unreachable: Int32 = 3
    }

    /// Parses and runs like ArgumentParser's own `main`, with usher's exit codes: 2 (not 64) for usage errors, 1 for
    /// the daemon's errors and 3 when the daemon cannot be reached.
    static func main() async {
        let command: any ParsableCommand
        do {
            command = try self.parseAsRoot(
                self.globalOptionsMovedAfterSubcommand(Array(CommandLine.arguments.dropFirst()))
            )
        } catch {
            Self.exitProcess(self.reportArgumentError(error))
        }
        do {
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                var command = command
                try command.run()
            }
        } catch {
            Self.exitProcess(self.report(error))
        }
    }

    /// Ends the process with `code`. (`exit` alone would name ArgumentParser's `exit(withError:)` in here.)
    private static func exitProcess(_ code: Int32) -> Never {
        #if canImport(Glibc)
        Glibc.exit(code)
        #else
        Musl.exit(code)
        #endif
    }

    /// `--socket` and `--json` are global: `usher --socket P users` means `usher users --socket P`. ArgumentParser
    /// only accepts a subcommand's options after its name, so options given before the subcommand are moved to the
    /// end of the arguments (before a `--` terminator), where every subcommand accepts them.
    static func globalOptionsMovedAfterSubcommand(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--json" || argument.hasPrefix("--socket=") {
                leading.append(argument)
                index += 1
            } else if argument == "--socket", index + 1 < arguments.count {
                leading.append(contentsOf: arguments[index...(index + 1)])
                index += 2
            } else {
                break
            }
        }
        guard !leading.isEmpty, index < arguments.count else { return arguments }
        var rest = Array(arguments[index...])
        let terminator = rest.firstIndex(of: "--") ?? rest.endIndex
        rest.insert(contentsOf: leading, at: terminator)
        return rest
    }

    /// Without a subcommand: the help, on stderr, as a usage error.
    func run() async throws {
        Output.error(Self.helpMessage())
        throw ExitCode(Exit.usage)
    }

    /// Prints what went wrong and returns the exit code.
    private static func report(_ error: any Error) -> Int32 {
        switch error {
        case let error as ResponseError:
            Output.error("usher: \(error.message) (\(error.code))")
            return Exit.failure
        case UsherClientError.cannotConnect(let location, let failure):
            Output.error("usher: " + self.unreachableMessage(location, failure))
            return Exit.unreachable
        case UsherClientError.connectionClosed:
            Output.error("usher: usherd closed the connection before answering")
            return Exit.unreachable
        case let error as UsherClientError:
            Output.error("usher: \(error)")
            return Exit.failure
        case let error as CLIError:
            Output.error("usher: \(error)")
            return Exit.failure
        case let error as ExitCode:
            return error.rawValue
        case is CancellationError:
            return Exit.failure
        default:
            // ArgumentParser's own errors (a help request, a validation error) keep its messages; anything else is a
            // plain failure.
            switch self.exitCode(for: error) {
            case .success, .validationFailure:
                return self.reportArgumentError(error)
            default:
                Output.error("usher: \(error)")
                return Exit.failure
            }
        }
    }

    /// Help and version requests go to stdout with 0; anything else about the command line to stderr with 2.
    private static func reportArgumentError(_ error: any Error) -> Int32 {
        if let error = error as? ExitCode { return error.rawValue }
        let message = self.fullMessage(for: error)
        if self.exitCode(for: error) == .success {
            if !message.isEmpty { Output.line(message) }
            return Exit.success
        }
        Output.error(message)
        return Exit.usage
    }

    /// `cannot reach usherd at /run/usher/usher.sock: no such file (set --socket or USHER_SOCKET)`, naming every path
    /// looked at and where the path came from.
    static func unreachableMessage(_ location: SocketLocation, _ failure: ConnectFailure) -> String {
        var notes = location.considered.filter { $0.path != location.path }.map {
            "also looked for \($0.path): \($0.skipReason ?? "skipped")"
        }
        switch location.source {
        case .explicit: notes.append("from --socket")
        case .environment: notes.append("from USHER_SOCKET")
        case .runtimeDirectory, .system: notes.append("set --socket or USHER_SOCKET")
        }
        return "cannot reach usherd at \(location.path): \(failure) (\(notes.joined(separator: "; ")))"
    }
}

/// A failure in the CLI itself (not the daemon's answer, not the connection): `usher: <message>`, exit 1.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
