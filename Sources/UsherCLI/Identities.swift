import ArgumentParser
import UsherClient

/// Linked identities and account deletion: `usher link`, `usher unlink`, `usher delete`.
extension Usher {
    struct Link: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "link",
            abstract: "Add a way to log in to a user: a guest signs up and keeps its id.",
            discussion: """
                Takes the options of usher login, and links the identity they prove to the active user of the \
                seat (or --user) instead of logging a new user in: the user keeps its id, and logging in later \
                with any of its identities finds it. Its session then belongs to the identity just linked. \
                Anonymous credentials cannot be linked; an identity that belongs to another user is refused \
                (identity_in_use).

                Example: a guest who logged in with --anonymous and then registered: usher link --email EMAIL
                """
        )

        @Option(help: "The user to link to: id or email (default: the active user of the seat).")
        var user: String?

        @OptionGroup var login: LoginOptions

        func validate() throws {
            if self.login.anonymous {
                throw ValidationError("Anonymous credentials cannot be linked to an existing user.")
            }
        }

        func run() async throws {
            try await Linking.$target.withValue(Linking.Target(user: self.user)) { try await self.login.run() }
        }
    }

    struct ListIdentities: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "identities",
            abstract: "List the identities of a user: the accounts that prove who it is, the session's first."
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The user: id or email (default: the seat's active user).", completion: UserCompletion.kind)
        var user: String?

        @Option(help: "The seat whose active user is meant (default: yours as logind sees it, else the default seat).")
        var seat: String?

        func run() async throws {
            try await self.options.withSession { session in
                let userID: String? = try await session.userID(for: self.user)
                let result = try await session.perform(ListIdentitiesRequest(userID: userID, seat: self.seat))
                guard !session.json else { return }
                for identity in result.identities {
                    Output.line(
                        "\(Terminal.escaped(identity.provider))\t\(Terminal.escaped(identity.kind))\t"
                            + Terminal.escaped(identity.subject)
                    )
                }
            }
        }
    }

    struct Unlink: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unlink",
            abstract: "Remove one identity from a user (never its last one).",
            discussion: """
                The identity is named by its provider and subject, as usher whoami --json lists them under \
                identities. Unlinking the identity the session belongs to logs the user out.
                """
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The user: id or email (default: the active user).", completion: UserCompletion.kind)
        var user: String?

        @Option(help: "The identity's provider.")
        var provider: String

        @Option(help: "The identity's subject.")
        var subject: String

        func run() async throws {
            try await self.options.withSession { session in
                guard let user = try await session.user(for: self.user) else {
                    throw CLIError(
                        self.user.map { "no user \(Terminal.escaped($0)) is on this device" } ?? "no user is logged in",
                        exitCode: Usher.Exit.notLoggedIn
                    )
                }
                let result = try await session.perform(
                    UnlinkIdentityRequest(userID: user.id, provider: self.provider, subject: self.subject)
                )
                guard !session.json else { return }
                if result.removed {
                    Output.line("Unlinked; \(Format.who(user)) had only anonymous identities left and was removed.")
                } else if let now = result.user {
                    Output.lines(Format.userFields(now))
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a user's account at its provider, then remove the user from this device.",
            discussion: """
                Unlike usher remove, which only forgets the user here, this deletes the account: a local account \
                with its password and API keys, or the account at an OpenID Connect provider that has an \
                account-deletion endpoint (delete_account_url). The user must be logged in. On a terminal, \
                usher asks first; elsewhere give --yes.
                """
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The user's id or email.", completion: UserCompletion.kind)
        var user: String

        @Flag(help: "Do not ask for confirmation.")
        var yes = false

        func run() async throws {
            try await self.options.withSession { session in
                let user = try await session.user(for: self.user)
                let userID = user?.id ?? self.user
                if !self.yes {
                    let who = user.map(Format.who) ?? Terminal.escaped(userID)
                    guard let answer = try Secrets.ask("Delete the account of \(who) for good? [y/N] ") else {
                        throw CLIError(
                            "not deleting without a terminal to ask on: give --yes",
                            exitCode: Usher.Exit.usage
                        )
                    }
                    guard ["y", "yes"].contains(Text.trimmingWhitespace(answer).lowercased()) else {
                        throw CLIError("not deleted")
                    }
                }
                let result = try await session.perform(DeleteUserRequest(userID: userID))
                guard !session.json else { return }
                Output.line("Deleted \(user.map(Format.who) ?? Terminal.escaped(result.userID)).")
            }
        }
    }
}

/// The user `usher link` links to, while it runs `usher login`'s code (nil: a login, not a link).
enum Linking {
    struct Target: Sendable {
        /// Id or email; nil: the seat's active user.
        var user: String?
    }

    @TaskLocal static var target: Target?
}
