import ArgumentParser
import UsherClient

/// `usher login` with no mode: what the provider takes decides, as `gh auth login` asks rather than fails.
extension Usher.LoginOptions {
    /// The flags that choose each credential type, for the message that names a provider's modes.
    static let flags: [String: String] = [
        "email_password": "--email", "anonymous": "--anonymous", "api_key": "--api-key-stdin",
        "jwt": "--jwt-stdin", "id_token": "--id-token", "function": "--function-stdin",
        "authorization_code": "(no option: a browser)", "device_code": "--device", "password": "--username",
        "client_credentials": "--client-credentials",
    ]

    /// At a provider with a browser login, the browser flow; at one that takes an email and a password (the local
    /// provider), the email is asked for on the terminal, then the password; anywhere else (or without a terminal),
    /// a usage error that names the options the provider accepts.
    func runWithoutMode() async throws {
        let location = SocketLocation.resolve(explicitPath: self.options.socket)
        let providers = try await UsherClient.withConnection(to: location) { client in
            try await client.send(ProvidersRequest()).providers
        }
        let provider = providers.first { self.provider == nil ? $0.default : $0.name == self.provider }
        // An unknown provider: the daemon's own answer names the problem.
        guard let provider else { return try await self.runBrowserFlow() }
        if provider.credentials.contains("authorization_code") { return try await self.runBrowserFlow() }
        if provider.credentials.contains("email_password"), let email = try Secrets.ask("Email: ") {
            let email = Text.trimmingWhitespace(email)
            guard !email.isEmpty else { throw CLIError("no email was entered", exitCode: Usher.Exit.usage) }
            let password = try Secrets.prompt("Password for \(email): ")
            return try await self.logIn(.emailPassword(provider: self.provider, email: email, password: password))
        }
        let modes = provider.credentials.compactMap { Self.flags[$0] }
        throw CLIError(
            "say how to log in at \(provider.name): "
                + (modes.isEmpty ? "it accepts no credentials usher can send" : modes.joined(separator: ", "))
                + " (see usher login --help)",
            exitCode: Usher.Exit.usage
        )
    }

    /// Sends `request` (on `--seat`) and prints the user logged in; under `usher link`, links its credentials to the
    /// user instead.
    func logIn(_ request: LoginRequest) async throws {
        var request = request
        request.seat = self.seat
        try await self.options.withSession { session in
            let result: UserResult
            if let target = Linking.target {
                var link = LinkCredentialsRequest(
                    userID: try await session.userID(for: target.user),
                    seat: self.seat,
                    provider: request.provider,
                    credentials: request.credentials
                )
                link.move = request.move
                result = try await session.perform(link)
            } else {
                result = try await session.perform(request)
            }
            guard !session.json else { return }
            Output.lines(Format.userFields(result.user))
        }
    }
}
