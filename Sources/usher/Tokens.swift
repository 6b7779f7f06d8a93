import ArgumentParser
import UsherClient

extension Usher {
    /// The CLI's hot path (`$(usher token)` in scripts and prompts): one blocking exchange on the main thread, with
    /// no event loop or threads started, since starting them cost more than the exchange.
    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Print a valid access token, and nothing else.",
            discussion: #"For scripts: curl -H "Authorization: Bearer $(usher token)" ..."#
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The user's id or email (default: the active user).")
        var user: String?

        @Option(
            name: .customLong("min-valid"),
            help: ArgumentHelp("How long the token must stay valid at least, in seconds.", valueName: "seconds")
        )
        var minValid: Int64?

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        func validate() throws {
            if let minValid = self.minValid, minValid < 0 {
                throw ValidationError("--min-valid must not be negative.")
            }
        }

        func run() throws {
            let connection = try BlockingConnection(to: self.options.location)
            var userID = self.user
            if let user = self.user, user.contains("@") {
                userID = try Session.userID(forEmail: user, among: try connection.send(ListUsersRequest()).users)
            }
            let (token, json) = try connection.sendReturningJSON(
                AccessTokenRequest(userID: userID, minValid: self.minValid, seat: self.seat)
            )
            if self.options.json {
                Output.json(json)
            } else {
                Output.line(token.accessToken)
            }
        }
    }

    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "refresh",
            abstract: "Refresh a user's access token now and print its new expiry."
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The user's id or email (default: the active user).")
        var user: String?

        func run() async throws {
            try await self.options.withSession { session in
                let userID = try await session.userID(for: self.user)
                let result = try await session.perform(RefreshRequest(userID: userID))
                guard !session.json else { return }
                Output.line(
                    "Refreshed the access token of \(result.userID); it expires "
                        + Format.timeWithDistance(result.accessTokenExpiresAt) + "."
                )
            }
        }
    }

    struct APIKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "api-key",
            abstract: "Create, list and delete a user's API keys.",
            subcommands: [Create.self, List.self, Delete.self]
        )

        /// Without a subcommand: the help, on stderr, as a usage error.
        func run() async throws {
            Output.error(Self.helpMessage())
            throw ExitCode(Usher.Exit.usage)
        }

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "create",
                abstract: "Create an API key and print it; it is shown only this once."
            )

            @OptionGroup var options: GlobalOptions

            @Argument(help: "A name for the key.")
            var name: String

            @Option(help: "The user's id or email (default: the active user).")
            var user: String?

            func run() async throws {
                try await self.options.withSession { session in
                    let userID = try await session.userID(for: self.user)
                    let result = try await session.perform(CreateAPIKeyRequest(name: self.name, userID: userID))
                    if !session.json { Output.line(result.key) }
                    Output.error(
                        "usher: API key \(result.name) of \(result.userID) will not be shown again; store it now."
                    )
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "List the names of a user's API keys."
            )

            @OptionGroup var options: GlobalOptions

            @Option(help: "The user's id or email (default: the active user).")
            var user: String?

            func run() async throws {
                try await self.options.withSession { session in
                    let userID = try await session.userID(for: self.user)
                    let result = try await session.perform(ListAPIKeysRequest(userID: userID))
                    guard !session.json else { return }
                    guard !result.apiKeys.isEmpty else {
                        Output.line("No API keys for \(result.userID).")
                        return
                    }
                    let rows = result.apiKeys.map { [$0.name, Format.time($0.createdAt)] }
                    Output.lines(Output.table(header: ["NAME", "CREATED"], rows: rows))
                }
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "delete",
                abstract: "Delete an API key; logging in with it fails from then on."
            )

            @OptionGroup var options: GlobalOptions

            @Argument(help: "The key's name.")
            var name: String

            @Option(help: "The user's id or email (default: the active user).")
            var user: String?

            func run() async throws {
                try await self.options.withSession { session in
                    let userID = try await session.userID(for: self.user)
                    let result = try await session.perform(DeleteAPIKeyRequest(name: self.name, userID: userID))
                    guard !session.json else { return }
                    Output.line("Deleted API key \(result.name) of \(result.userID).")
                }
            }
        }
    }
}
