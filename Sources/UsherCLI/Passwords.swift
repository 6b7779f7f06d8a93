import ArgumentParser
import UsherClient

/// Passwords and confirmation of email/password accounts. Passwords and tokens are secrets: they are asked for on the
/// terminal (without echo) or read from stdin, never taken from the command line, which every user of the machine can
/// read in `ps`.
extension Usher {
    struct Passwd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "passwd",
            abstract: "Change the password of an email/password account, or reset it as an administrator.",
            discussion: """
                With --email, the current and the new password are asked for on the terminal, or read from the first \
                two lines of stdin; the account's sessions on this device stay logged in. With --reset EMAIL (needs \
                the manage permission), only the new password is asked for (twice), or read from the first line of \
                stdin; every session of the account on this device is logged out. Never from the command line.
                """
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The account's email (change the password, given the current one).")
        var email: String?

        @Option(name: .customLong("reset"), help: ArgumentHelp("Reset this account's password.", valueName: "email"))
        var resetEmail: String?

        @Option(help: "The provider (default: the daemon's default provider).")
        var provider: String?

        @Flag(help: "Read the passwords from stdin (the current and the new one; with --reset, the new one) instead.")
        var passwordStdin = false

        func validate() throws {
            guard (self.email == nil) != (self.resetEmail == nil) else {
                throw ValidationError("give --email EMAIL to change a password, or --reset EMAIL to reset one")
            }
        }

        func run() async throws {
            if let resetEmail { return try await self.reset(resetEmail) }
            let email = self.email ?? ""
            // Read before connecting: a person typing does not hold a connection open.
            let old: String
            let new: String
            if self.passwordStdin {
                (old, new) = try Secrets.twoLinesOfStandardInput(what: "password")
            } else {
                old = try Secrets.prompt("Current password for \(email): ")
                new = try Secrets.newPassword()
            }
            try await self.options.withSession { session in
                let result = try await session.perform(
                    ChangePasswordRequest(provider: self.provider, email: email, oldPassword: old, newPassword: new)
                )
                guard !session.json else { return }
                Output.line(Terminal.escaped("Changed the password of \(result.email) at \(result.provider)."))
            }
        }

        private func reset(_ email: String) async throws {
            let new =
                self.passwordStdin
                ? try Secrets.firstLineOfStandardInput(what: "password")
                : try Secrets.newPassword(for: email)
            try await self.options.withSession { session in
                let result = try await session.perform(
                    ResetPasswordRequest(provider: self.provider, email: email, newPassword: new)
                )
                guard !session.json else { return }
                Output.line(Terminal.escaped("Reset the password of \(result.email) at \(result.provider)."))
                for who in await session.names(of: result.loggedOut) { Output.line("Logged out \(who).") }
            }
        }
    }

    struct Confirm: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "confirm",
            abstract: "Confirm an email/password account with the token its confirmation hook delivered.",
            discussion: "The token is asked for on the terminal, or read from the first line of stdin; never argv."
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The provider (default: the daemon's default provider).")
        var provider: String?

        @Flag(help: "Read the token from the first line of stdin instead of asking for it.")
        var tokenStdin = false

        func run() async throws {
            let token =
                self.tokenStdin
                ? try Secrets.firstLineOfStandardInput(what: "token")
                : try Secrets.prompt("Confirmation token: ", what: "token", option: "--token-stdin")
            try await self.options.withSession { session in
                let result = try await session.perform(ConfirmUserRequest(provider: self.provider, token: token))
                guard !session.json else { return }
                Output.line(
                    Terminal.escaped(
                        "Confirmed \(result.email) at \(result.provider). Log in with: usher login --email \(result.email)"
                    )
                )
            }
        }
    }

    struct ResendConfirmation: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "resend-confirmation",
            abstract: "Have the confirmation hook deliver a new token for an unconfirmed account (the old one stops "
                + "working).",
            discussion: "The answer is the same whether or not the email has an unconfirmed account."
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The account's email.")
        var email: String

        @Option(help: "The provider (default: the daemon's default provider).")
        var provider: String?

        func run() async throws {
            try await self.options.withSession { session in
                let result = try await session.perform(
                    ResendConfirmationRequest(provider: self.provider, email: self.email)
                )
                guard !session.json else { return }
                Output.line(
                    Terminal.escaped(
                        "If \(self.email) has an unconfirmed account at \(result.provider), a new token is on its way."
                    )
                )
            }
        }
    }

    struct ResetPassword: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-password",
            abstract: "Ask for a password-reset token (EMAIL), or set a new password with one (--token).",
            discussion: """
                With EMAIL, the reset hook delivers a token to the account's owner; the answer is the same whether or \
                not the email has an account. With --token, the token and the new password (twice) are asked for on \
                the terminal, or read from the first two lines of stdin (--token-stdin); never from the command line. \
                Every session of the account on this device is then logged out.
                """
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The account's email (ask for a token).")
        var email: String?

        @Flag(help: "Set a new password with a token instead of asking for one.")
        var token = false

        @Option(help: "The provider (default: the daemon's default provider).")
        var provider: String?

        @Flag(help: "With --token: read the token and the new password from the first two lines of stdin.")
        var tokenStdin = false

        func validate() throws {
            guard (self.email == nil) == self.token else {
                throw ValidationError("give an EMAIL to ask for a reset token, or --token to use one (not both)")
            }
        }

        func run() async throws {
            guard self.token else { return try await self.request(self.email ?? "") }
            let token: String
            let new: String
            if self.tokenStdin {
                (token, new) = try Secrets.twoLinesOfStandardInput(
                    what: "token",
                    expecting: "give the token and the new password on the first two lines of standard input"
                )
            } else {
                token = try Secrets.prompt("Reset token: ", what: "token", option: "--token-stdin")
                new = try Secrets.newPassword()
            }
            try await self.options.withSession { session in
                let result = try await session.perform(
                    CompletePasswordResetRequest(provider: self.provider, token: token, newPassword: new)
                )
                guard !session.json else { return }
                Output.line(Terminal.escaped("Set a new password for \(result.email) at \(result.provider)."))
                for who in await session.names(of: result.loggedOut) { Output.line("Logged out \(who).") }
            }
        }

        private func request(_ email: String) async throws {
            try await self.options.withSession { session in
                let result = try await session.perform(
                    RequestPasswordResetRequest(provider: self.provider, email: email)
                )
                guard !session.json else { return }
                Output.line(
                    Terminal.escaped("If \(email) has an account at \(result.provider), a reset token is on its way.")
                )
            }
        }
    }
}

extension Secrets {
    /// A new password, asked for twice on the terminal.
    static func newPassword(for email: String? = nil) throws(CLIError) -> String {
        let new = try Secrets.prompt(email.map { "New password for \($0): " } ?? "New password: ")
        guard try Secrets.prompt("Repeat the new password: ") == new else {
            throw CLIError("the new passwords do not match")
        }
        return new
    }
}
