import ArgumentParser
import UsherClient

extension Usher {
    struct Profile: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "profile",
            abstract: "Show a user's profile; read it again at the provider, or set a local account's.",
            discussion: """
                Without options: the user's profile and custom data as the daemon holds them. --refresh refreshes the \
                user's tokens and reads its claims at the provider again (OpenID Connect userinfo). --name, --picture \
                and --locale set them on an email/password account (an empty value removes one); the account keeps \
                them for every later login.
                """
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The user's id or email (default: the active user).", completion: UserCompletion.kind)
        var user: String?

        @Flag(help: "Read the profile at the provider again (refresh_profile).")
        var refresh = false

        @Option(help: "Set the account's display name (\"\" removes it).")
        var name: String?

        @Option(help: "Set the account's picture: an https:// URL (\"\" removes it).")
        var picture: String?

        @Option(help: "Set the account's locale: a BCP 47 tag such as en or pt-BR (\"\" removes it).")
        var locale: String?

        var changes: [String: JSONValue] {
            var changes: [String: JSONValue] = [:]
            for (key, value) in [("name", self.name), ("picture", self.picture), ("locale", self.locale)] {
                guard let value else { continue }
                changes[key] = value.isEmpty ? .null : .string(value)
            }
            return changes
        }

        func validate() throws {
            if self.refresh && !self.changes.isEmpty {
                throw ValidationError(
                    "--refresh reads the profile at the provider; it cannot be combined with setting it"
                )
            }
        }

        func run() async throws {
            try await self.options.withSession { session in
                let userID = try await session.userID(for: self.user)
                let user: UserInfo
                if self.refresh {
                    user = try await session.perform(RefreshProfileRequest(userID: userID)).user
                } else if !self.changes.isEmpty {
                    user = try await session.perform(UpdateProfileRequest(userID: userID, changes: self.changes)).user
                } else if let userID {
                    let list = try await session.client.send(ListUsersRequest())
                    guard let found = list.users.first(where: { $0.id == userID }) else {
                        throw CLIError("no user \(userID) on this device")
                    }
                    if session.json { Output.json(found) }
                    user = found
                } else {
                    guard let found = try await session.perform(CurrentUserRequest()).user else {
                        if !session.json { Output.error("No user is logged in.") }
                        throw ExitCode(Usher.Exit.notLoggedIn)
                    }
                    user = found
                }
                guard !session.json else { return }
                var pairs = [("user", Format.who(user))]
                pairs += Format.profileFields(user)
                if user.profile.isEmpty && user.customData.isEmpty { pairs.append(("profile", "(empty)")) }
                Output.lines(Output.fields(pairs))
            }
        }
    }
}
