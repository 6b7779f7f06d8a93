import ArgumentParser
import UsherClient

extension Usher {
    struct Providers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the identity providers and the credentials each accepts; * marks the default."
        )

        @OptionGroup var options: GlobalOptions

        func run() async throws {
            try await self.options.withSession { session in
                let result = try await session.perform(ProvidersRequest())
                guard !session.json else { return }
                guard !result.providers.isEmpty else {
                    Output.line("No providers are configured.")
                    return
                }
                let rows = result.providers.map { provider in
                    [
                        provider.default ? "*" : " ", provider.name, provider.type,
                        provider.credentials.joined(separator: ","),
                    ]
                }
                Output.lines(Output.table(header: [" ", "NAME", "TYPE", "CREDENTIALS"], rows: rows))
            }
        }
    }

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an email/password account at a provider that allows registration.",
            discussion: "The password is asked for on the terminal, or read from the first line of stdin."
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The account's email.")
        var email: String

        @Option(help: "The provider (default: the daemon's default provider).")
        var provider: String?

        @Flag(help: "Read the password from the first line of stdin instead of asking for it.")
        var passwordStdin = false

        func run() async throws {
            // Read before connecting: a person typing does not hold a connection open.
            let password: String
            if self.passwordStdin {
                password = try Secrets.firstLineOfStandardInput(what: "password")
            } else {
                password = try Secrets.prompt("Password for \(self.email): ")
                guard try Secrets.prompt("Repeat the password: ") == password else {
                    throw CLIError("the passwords do not match")
                }
            }
            try await self.options.withSession { session in
                let result = try await session.perform(
                    RegisterRequest(provider: self.provider, email: self.email, password: password)
                )
                guard !session.json else { return }
                Output.line(
                    "Registered \(result.email) at \(result.provider). Log in with: usher login --email \(result.email)"
                )
            }
        }
    }

    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Log in; the user becomes the active user.",
            discussion: """
                Give exactly one of --email (the password is asked for on the terminal, or read from stdin with \
                --password-stdin), --anonymous, or --api-key-stdin (the key is the first line of stdin).
                """
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The provider (default: the daemon's default provider).")
        var provider: String?

        @Option(help: "Log in with this email and a password.")
        var email: String?

        @Flag(help: "With --email: read the password from the first line of stdin instead of asking for it.")
        var passwordStdin = false

        @Flag(help: "Log in as a new anonymous user.")
        var anonymous = false

        @Flag(help: "Log in with an API key read from the first line of stdin.")
        var apiKeyStdin = false

        func validate() throws {
            let modes = [self.email != nil, self.anonymous, self.apiKeyStdin].filter { $0 }.count
            guard modes == 1 else {
                throw ValidationError("Give exactly one of --email, --anonymous or --api-key-stdin.")
            }
            if self.passwordStdin && self.email == nil {
                throw ValidationError("--password-stdin goes with --email.")
            }
        }

        func run() async throws {
            // Secrets are read before connecting: a person typing does not hold a connection open.
            let request: LoginRequest
            if let email = self.email {
                let password =
                    self.passwordStdin
                    ? try Secrets.firstLineOfStandardInput(what: "password")
                    : try Secrets.prompt("Password for \(email): ")
                request = .emailPassword(provider: self.provider, email: email, password: password)
            } else if self.anonymous {
                request = .anonymous(provider: self.provider)
            } else {
                request = .apiKey(provider: self.provider, key: try Secrets.firstLineOfStandardInput(what: "API key"))
            }
            try await self.options.withSession { session in
                let result = try await session.perform(request)
                guard !session.json else { return }
                Output.lines(Format.userFields(result.user))
            }
        }
    }
}
