import ArgumentParser
import UsherClient

extension Usher {
    struct Providers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "providers",
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
            commandName: "register",
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
                guard result.confirmed != false else {
                    Output.line(
                        Terminal.escaped(
                            "Registered \(result.email) at \(result.provider). It logs in once confirmed: usher confirm "
                                + "with the token its confirmation hook delivered."
                        )
                    )
                    return
                }
                Output.line(
                    Terminal.escaped(
                        "Registered \(result.email) at \(result.provider). Log in with: usher login --email \(result.email)"
                    )
                )
            }
        }
    }

    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "login",
            abstract: "Log in; the user becomes the active user.",
            discussion: """
                Give exactly one of --email (the password is asked for on the terminal, or read from stdin with \
                --password-stdin), --anonymous, --api-key-stdin (the key is the first line of stdin), --jwt-stdin \
                (a JWT from the provider's configured issuer, the first line of stdin), --id-token ISSUER with \
                --token-stdin (an ID token from that configured issuer), or --function-stdin (stdin is a JSON \
                object, the payload for the provider's authentication function).

                Without any of these at a provider that takes an email and a password (the local provider), the \
                email is asked for on the terminal; at a provider that takes neither that nor a browser login, the \
                options it accepts are named.

                At an OpenID Connect provider: without any of these, log in with a browser (opened with xdg-open \
                when a display exists; --no-browser prints the URL alone on its line on stderr, and usher waits \
                for the redirect on the loopback address); --device shows a code to enter at the provider's page \
                and waits; --username U (with the password asked for, or --password-stdin) uses the password \
                grant; --client-credentials logs in the provider's service account.
                """
        )

        @OptionGroup var login: LoginOptions

        func run() async throws { try await self.login.run() }
    }

    /// The options of `usher login`, and what they do: shared with `usher link`, which takes the same options. Kept
    /// apart from the `Login` command so that `link` is not parsed as a subcommand of `login` (its usage line read
    /// `usher login link`).
    struct LoginOptions: ParsableArguments {
        @OptionGroup var options: GlobalOptions

        @Option(help: "The provider (default: the daemon's default provider).")
        var provider: String?

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        @Option(help: "Log in with this email and a password.")
        var email: String?

        @Flag(help: "With --email or --username: read the password from the first line of stdin instead of asking.")
        var passwordStdin = false

        @Flag(help: "Log in as a new anonymous user.")
        var anonymous = false

        @Flag(help: "Log in with an API key read from the first line of stdin.")
        var apiKeyStdin = false

        @Flag(help: "Log in with a JWT read from the first line of stdin.")
        var jwtStdin = false

        @Option(
            help: ArgumentHelp(
                "Log in with an ID token from this configured issuer (give --token-stdin).",
                valueName: "issuer"
            )
        )
        var idToken: String?

        @Flag(help: "With --id-token: read the ID token from the first line of stdin.")
        var tokenStdin = false

        @Option(help: "With --id-token: the nonce the ID token must carry.")
        var nonce: String?

        @Flag(
            help:
                "Log in through the provider's authentication function; its payload, a JSON object, is read from stdin."
        )
        var functionStdin = false

        /// Refused: a payload in the arguments (a one-time code, a password) is shown to every user by `ps`.
        @Option(help: ArgumentHelp("Removed: use --function-stdin.", valueName: "json", visibility: .hidden))
        var function: String?

        @Option(help: "Log in with this username and a password (an OpenID Connect provider's password grant).")
        var username: String?

        @Flag(help: "Log in with the device flow: shows a code to enter at the provider's page, then waits.")
        var device = false

        @Flag(help: "Log in as the provider's service account (OpenID Connect client credentials).")
        var clientCredentials = false

        @Flag(help: "Browser login: print the URL instead of opening a browser.")
        var noBrowser = false

        func validate() throws {
            let modes = [
                self.email != nil, self.anonymous, self.apiKeyStdin, self.jwtStdin, self.idToken != nil,
                self.functionStdin, self.username != nil, self.device, self.clientCredentials,
            ].filter { $0 }.count
            if self.function != nil {
                throw ValidationError(
                    "--function is gone: a payload on the command line is shown to every user by ps. Pipe it to "
                        + "--function-stdin instead, for example: "
                        + "printf '%s' '{\"code\": \"1234\"}' | usher login --function-stdin"
                )
            }
            guard modes <= 1 else {
                throw ValidationError(
                    "Give at most one of --email, --anonymous, --api-key-stdin, --jwt-stdin, --id-token, "
                        + "--function-stdin, --username, --device or --client-credentials "
                        + "(none: log in with a browser)."
                )
            }
            if self.passwordStdin && self.email == nil && self.username == nil {
                throw ValidationError("--password-stdin goes with --email or --username.")
            }
            if self.noBrowser && modes != 0 {
                throw ValidationError("--no-browser goes with the browser login (no other mode).")
            }
            if self.idToken != nil && !self.tokenStdin {
                throw ValidationError("--id-token needs --token-stdin: the ID token is read from stdin.")
            }
            if self.tokenStdin && self.idToken == nil {
                throw ValidationError("--token-stdin goes with --id-token.")
            }
            if self.nonce != nil && self.idToken == nil {
                throw ValidationError("--nonce goes with --id-token.")
            }
        }

        func run() async throws {
            if self.device { return try await self.runDeviceFlow() }
            if !self.anonymous && !self.apiKeyStdin && !self.jwtStdin && !self.clientCredentials && self.email == nil
                && self.idToken == nil && !self.functionStdin && self.username == nil
            {
                return try await self.runWithoutMode()
            }
            // Secrets are read before connecting: a person typing does not hold a connection open.
            var request: LoginRequest
            if let username = self.username {
                let password =
                    self.passwordStdin
                    ? try Secrets.firstLineOfStandardInput(what: "password")
                    : try Secrets.prompt("Password for \(username): ")
                request = LoginRequest(
                    provider: self.provider,
                    credentials: ["type": "password", "username": .string(username), "password": .string(password)]
                )
            } else if self.clientCredentials {
                request = LoginRequest(provider: self.provider, credentials: ["type": "client_credentials"])
            } else if let email = self.email {
                let password =
                    self.passwordStdin
                    ? try Secrets.firstLineOfStandardInput(what: "password")
                    : try Secrets.prompt("Password for \(email): ")
                request = .emailPassword(provider: self.provider, email: email, password: password)
            } else if self.anonymous {
                request = .anonymous(provider: self.provider)
            } else if self.jwtStdin {
                let token = try Secrets.firstLineOfStandardInput(what: "JWT")
                request = LoginRequest(provider: self.provider, credentials: ["type": "jwt", "token": .string(token)])
            } else if let issuer = self.idToken {
                var credentials: [String: JSONValue] = [
                    "type": "id_token", "issuer": .string(issuer),
                    "token": .string(try Secrets.firstLineOfStandardInput(what: "ID token")),
                ]
                if let nonce = self.nonce { credentials["nonce"] = .string(nonce) }
                request = LoginRequest(provider: self.provider, credentials: credentials)
            } else if self.functionStdin {
                let payload = try Secrets.jsonObjectFromStandardInput(what: "function payload")
                request = LoginRequest(
                    provider: self.provider,
                    credentials: ["type": "function", "payload": .object(payload)]
                )
            } else {
                request = .apiKey(provider: self.provider, key: try Secrets.firstLineOfStandardInput(what: "API key"))
            }
            try await self.logIn(request)
        }
    }
}
