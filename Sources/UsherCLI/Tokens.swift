import ArgumentParser
import UsherClient

extension Usher {
    /// The CLI's hot path (`$(usher token)` in scripts and prompts): one blocking exchange on the main thread, with
    /// no event loop or threads started, since starting them cost more than the exchange.
    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Print a valid access token, and nothing else.",
            discussion: """
                For scripts: usher token --header | curl -H @- ... sends the token, and curl is not run without \
                one (set -o pipefail); usher exec runs a command with the token in its environment. Without a \
                token nothing is printed on stdout and the exit status is 4 (no user logged in) or 1.
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var token: TokenOptions

        @Flag(
            help: """
                Print the whole header line, Authorization: Bearer <token> (for curl -H @-); DPoP instead of Bearer \
                for a DPoP-bound token, which also needs a proof (usher dpop-proof).
                """
        )
        var header = false

        @Flag(help: "Print when the token expires (RFC 3339, UTC) instead of the token.")
        var expires = false

        @Flag(
            help: "Print the token's type (Bearer, or DPoP when it is bound to the session's key) instead of the token."
        )
        var type = false

        func validate() throws {
            if [self.header, self.expires, self.type].filter({ $0 }).count > 1 {
                throw ValidationError("Give one of --header, --expires and --type.")
            }
        }

        func run() throws {
            let printing: Printing = self.expires ? .expiry : self.type ? .type : self.header ? .header : .token
            try Self.print(printing, at: self.options.location, json: self.options.json) { connection in
                try self.token.request(on: connection)
            }
        }

        /// What `usher token` prints.
        enum Printing {
            case token, header, expiry, type
        }

        /// Asks for the token that `request` (made on the connection) names and prints it, or with `json` the
        /// answer as usherd sent it. Shared with the command line parsed without ArgumentParser (`QuickToken`).
        static func print(
            _ printing: Printing,
            at location: SocketLocation,
            json: Bool,
            request: (BlockingConnection) throws -> AccessTokenRequest
        ) throws {
            let connection = try BlockingConnection(to: location)
            let (token, value) = try connection.namingUsers {
                try TokenOptions.token(try request(connection), on: connection, json: json)
            }
            if let value {
                Output.json(value)
                return
            }
            switch printing {
            case .expiry: Output.line(token.expiresAt.rfc3339)
            case .type: Output.line(token.tokenType)
            case .header: Output.line("Authorization: \(token.tokenType) \(token.accessToken)")
            case .token: Output.line(token.accessToken)
            }
        }
    }

    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "refresh",
            abstract: "Refresh a user's access token now and print its new expiry."
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The user's id or email (default: the active user).", completion: UserCompletion.kind)
        var user: String?

        func run() async throws {
            try await self.options.withSession { session in
                let userID = try await session.userID(for: self.user)
                let result = try await session.perform(RefreshRequest(userID: userID))
                guard !session.json else { return }
                Output.line(
                    "Refreshed the access token of \(Terminal.escaped(result.userID)); it expires "
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

        /// Without a subcommand: the help, on stderr, as a usage error. Asked of the root, so that the usage names
        /// the whole command (`usher api-key <subcommand>`).
        func run() async throws {
            Output.error(Usher.helpMessage(for: Self.self))
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

            @Option(help: "The user's id or email (default: the active user).", completion: UserCompletion.kind)
            var user: String?

            func run() async throws {
                try await self.options.withSession { session in
                    let userID = try await session.userID(for: self.user)
                    let result = try await session.perform(CreateAPIKeyRequest(name: self.name, userID: userID))
                    if !session.json { Output.line(result.key) }
                    let who = await session.name(of: result.userID)
                    Output.error(
                        "usher: API key \(Terminal.escaped(result.name)) of \(who) will not be shown again; store it now."
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

            @Option(help: "The user's id or email (default: the active user).", completion: UserCompletion.kind)
            var user: String?

            func run() async throws {
                try await self.options.withSession { session in
                    let userID = try await session.userID(for: self.user)
                    let result = try await session.perform(ListAPIKeysRequest(userID: userID))
                    guard !session.json else { return }
                    guard !result.apiKeys.isEmpty else {
                        Output.line("No API keys for \(await session.name(of: result.userID)).")
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

            @Option(help: "The user's id or email (default: the active user).", completion: UserCompletion.kind)
            var user: String?

            func run() async throws {
                try await self.options.withSession { session in
                    let userID = try await session.userID(for: self.user)
                    let result = try await session.perform(DeleteAPIKeyRequest(name: self.name, userID: userID))
                    guard !session.json else { return }
                    let who = await session.name(of: result.userID)
                    Output.line("Deleted API key \(Terminal.escaped(result.name)) of \(who).")
                }
            }
        }
    }
}
