import ArgumentParser
import UsherClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The `usher` command line, for the programs that run it: the `usher` executable of this package, and `usherd` when
/// it is run under another name (the package installs one file as both).
public enum UsherCommandLine {
    /// Parses `CommandLine.arguments` and runs the command; returns on success, exits the process otherwise.
    public static func main() async {
        await Usher.main()
    }
}

struct Usher: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usher",
        abstract: "Talk to usherd: the users logged in on this device, their tokens and API keys.",
        discussion: """
            The daemon's socket is --socket, else $USHER_SOCKET, else $XDG_RUNTIME_DIR/usher/usher.sock when it \
            exists (not for root), else /run/usher/usher.sock. --socket and --json are accepted anywhere on the line.

            Exit codes: 0 success, 1 the daemon answered with an error, 2 usage error, 3 usherd cannot be reached, \
            4 no user is logged in (no active user, or the user named is logged out).

            Colour is used on a terminal only, never with NO_COLOR set or with --json.
            """,
        version: usherVersion,
        subcommands: [
            Status.self, WhoAmI.self, Users.self, Providers.self, Register.self, Passwd.self, Confirm.self,
            ResendConfirmation.self, ResetPassword.self, Login.self, Switch.self,
            Logout.self, Remove.self, Token.self, DPoPProof.self, Exec.self, Refresh.self, APIKey.self, Watch.self,
            Call.self,
            Seats.self, Inhibit.self, Leases.self, Lock.self, Unlock.self, PIN.self, Link.self, ListIdentities.self,
            Unlink.self,
            Delete.self, Profile.self,
            GitCredential.self,
            SetupGit.self, KubeCredential.self, SetupKube.self,
        ]
    )

    /// Shown in the top-level help; `CommandLineArguments` moves them after the subcommand, where they are parsed.
    @OptionGroup var options: GlobalOptions

    /// The exit codes scripts can rely on.
    enum Exit {
        static let success: Int32 = 0
        /// The daemon answered with an error (or the CLI failed on its own).
        static let failure: Int32 = 1
        /// The command line is wrong.
        static let usage: Int32 = 2
        /// The daemon cannot be reached.
        static let unreachable: Int32 = 3
        /// Nobody to act for: no active user, or the user named is logged out (as `klist` and `gh auth status` exit
        /// non-zero without credentials), so `usher whoami -q && ...` reads as a check.
        static let notLoggedIn: Int32 = 4
    }

    /// Parses and runs like ArgumentParser's own `main`, with usher's exit codes: 2 (not 64) for usage errors, 1 for
    /// the daemon's errors, 3 when the daemon cannot be reached and 4 when no user is logged in.
    static func main() async {
        // Before a password, a token or an API key is in memory.
        CoreDumps.turnOff()
        var arguments = Array(CommandLine.arguments.dropFirst())
        // Run by git as a credential helper named `git-credential-usher` (credential.helper = usher).
        if CommandLine.arguments.first?.split(separator: "/").last == "git-credential-usher" {
            arguments = ["git-credential"] + arguments
        }
        // The CLI's hot path, without ArgumentParser (see QuickToken).
        if let token = QuickToken(CommandLineArguments.globalOptionsMovedToTheEnd(arguments)) {
            do {
                try token.run()
                return
            } catch {
                Self.exitProcess(self.report(error))
            }
        }
        if let suggestion = CommandLineArguments.unknownCommand(in: arguments, of: self) {
            Output.error("usher: \(suggestion)")
            Self.exitProcess(Exit.usage)
        }
        let command: any ParsableCommand
        do {
            command = try self.parseAsRoot(CommandLineArguments.globalOptionsMovedToTheEnd(arguments))
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
    static func exitProcess(_ code: Int32) -> Never {
        #if canImport(Glibc)
        Glibc.exit(code)
        #else
        Musl.exit(code)
        #endif
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
            Output.error("usher: \(Terminal.escaped(error.message)) (\(error.code))")
            return error.code == .noActiveUser || error.code == .userLoggedOut ? Exit.notLoggedIn : Exit.failure
        case UsherClientError.cannotConnect(let location, let failure):
            Output.error("usher: " + Terminal.escaped(self.unreachableMessage(location, failure)))
            return Exit.unreachable
        case UsherClientError.connectionClosed:
            Output.error("usher: usherd closed the connection before answering")
            return Exit.unreachable
        case let error as UsherClientError:
            Output.error("usher: \(Terminal.escaped(error.description))")
            return Exit.failure
        case let error as CLIError:
            // A CLI error can name what the daemon sent (ids and providers of users that share an email).
            Output.error("usher: \(Terminal.escaped(error.description))")
            return error.exitCode
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
                Output.error("usher: \(Terminal.escaped(String(describing: error)))")
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
    /// 1 unless the failure is one scripts test for (`Usher.Exit.notLoggedIn`).
    var exitCode: Int32
    init(_ description: String, exitCode: Int32 = Usher.Exit.failure) {
        self.description = description
        self.exitCode = exitCode
    }
}
