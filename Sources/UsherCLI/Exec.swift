import ArgumentParser
import UsherClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Usher {
    /// Runs a command with the token in its environment, and refuses to start it without one: the fail-closed way
    /// to hand a token to a program, instead of `$(usher token)`, which becomes an empty string when there is none.
    struct Exec: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "exec",
            abstract: "Run a command with a valid access token in its environment (USHER_TOKEN).",
            discussion: """
                usher exec -- sh -c 'curl -H "Authorization: Bearer $USHER_TOKEN" https://api.example.com/' \\
                replaces itself with the command, which gets USHER_TOKEN (or --env NAME) and USHER_USER_ID. Without \\
                a token the command is not started: nothing runs, and usher exits 4 (no user logged in) or 1. \\
                The token is valid for at least --min-valid when the command starts; it is not refreshed while the \\
                command runs. A command that cannot be started exits 127 (not found) or 126, as env(1) does.
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var token: TokenOptions

        @Option(help: ArgumentHelp("The environment variable that holds the token.", valueName: "name"))
        var env = "USHER_TOKEN"

        @Argument(
            parsing: .postTerminator,
            help: ArgumentHelp("The command and its arguments, after --.", valueName: "command")
        )
        var command: [String] = []

        func validate() throws {
            guard !self.command.isEmpty else {
                throw ValidationError("Give the command to run after --, e.g. usher exec -- curl ...")
            }
            guard !self.env.isEmpty, !self.env.contains("="), self.env.unicodeScalars.allSatisfy({ $0.isASCII }) else {
                throw ValidationError("--env must be an environment variable's name.")
            }
        }

        func run() throws {
            let token: AccessTokenRequest.Result
            do {
                // The connection is closed before the command starts (and is close-on-exec in any case).
                let connection = try BlockingConnection(to: self.options.location)
                token = try self.token.token(on: connection).result
            }
            guard !token.accessToken.isEmpty else { throw CLIError("usherd handed out an empty token") }
            setenv(self.env, token.accessToken, 1)
            setenv("USHER_USER_ID", token.userID, 1)
            let arguments = self.command.map { strdup($0) } + [nil]
            var code: Int32 = 0
            CoreDumps.restored {
                execvp(self.command[0], arguments)
                // Only reached when the command could not be started.
                code = errno
            }
            throw CLIError(
                "cannot run \(self.command[0]): \(String(cString: strerror(code)))",
                exitCode: code == ENOENT ? 127 : 126
            )
        }
    }
}
