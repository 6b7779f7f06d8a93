import ArgumentParser
import UsherClient

extension Usher {
    struct WhoAmI: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "whoami",
            abstract: "Show the active user."
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        func run() async throws {
            try await self.options.withSession { session in
                let current = try await session.perform(CurrentUserRequest(seat: self.seat))
                guard !session.json else { return }
                guard let user = current.user else {
                    Output.line("No user is logged in.")
                    return
                }
                Output.lines(Format.userFields(user))
            }
        }
    }

    struct Users: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "users",
            abstract: "List every user on this device; * marks the active one."
        )

        @OptionGroup var options: GlobalOptions

        func run() async throws {
            try await self.options.withSession { session in
                let list = try await session.perform(ListUsersRequest())
                guard !session.json else { return }
                guard !list.users.isEmpty else {
                    Output.line("No users on this device.")
                    return
                }
                let rows = list.users.map { user in
                    [
                        user.active ? "*" : " ",
                        user.id,
                        user.email ?? "-",
                        user.provider,
                        user.kind,
                        user.state.rawValue,
                        user.tokenState.rawValue,
                        user.nextRefreshAt.map(Format.time) ?? "-",
                    ]
                }
                Output.lines(
                    Output.table(
                        header: [" ", "ID", "EMAIL", "PROVIDER", "KIND", "STATE", "TOKEN", "NEXT REFRESH"],
                        rows: rows
                    )
                )
            }
        }
    }

    struct Switch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "switch",
            abstract: "Make another logged-in user the active user."
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The user's id or email.")
        var user: String

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        @Flag(help: "Move the user here when they are active on another seat.")
        var move = false

        func run() async throws {
            try await self.options.withSession { session in
                let userID = try await session.userID(for: self.user)
                var request = SwitchUserRequest(userID: userID)
                request.seat = self.seat
                request.move = self.move
                let result = try await session.perform(request)
                guard !session.json else { return }
                Output.lines(Format.userFields(result.user))
            }
        }
    }

    struct Logout: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "logout",
            abstract: "Log a user out (default: the active user); the user stays on the device.",
            discussion: "An anonymous user is removed instead, since it could never log in again."
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The user's id or email (default: the active user).")
        var user: String?

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        func run() async throws {
            try await self.options.withSession { session in
                let userID = try await session.userID(for: self.user)
                let result = try await session.perform(LogoutRequest(userID: userID, seat: self.seat))
                guard !session.json else { return }
                if result.user.state == .removed {
                    Output.line("Removed anonymous user \(result.user.id).")
                } else if result.revoked {
                    Output.line("Logged out \(Format.user(result.user)).")
                } else {
                    Output.line(
                        "Logged out \(Format.user(result.user)); the provider did not confirm that the session was revoked."
                    )
                }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Log a user out and delete everything about it from this device."
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The user's id or email.")
        var user: String

        func run() async throws {
            try await self.options.withSession { session in
                let userID = try await session.userID(for: self.user)
                let result = try await session.perform(RemoveUserRequest(userID: userID))
                guard !session.json else { return }
                Output.line("Removed \(result.userID).")
            }
        }
    }
}
