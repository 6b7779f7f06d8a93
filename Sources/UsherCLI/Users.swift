import ArgumentParser
import UsherClient

extension Usher {
    struct WhoAmI: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "whoami",
            abstract: "Show the active user; exit 4 when no user is logged in.",
            discussion: "For scripts: usher whoami --quiet && ... runs only while someone is logged in.",
            aliases: ["current"]
        )

        @OptionGroup var options: GlobalOptions

        @Flag(name: .shortAndLong, help: "Print nothing; only the exit status says whether a user is logged in.")
        var quiet = false

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        @Flag(
            help: """
                Show which program usherd takes this one for (hello's program: executable, its SHA-256 when a rule \
                asks for it, systemd units) and the permissions that gives it, instead of the active user.
                """
        )
        var program = false

        func run() async throws {
            if self.program {
                try await self.options.withSession { session in
                    let hello = try await session.perform(HelloRequest())
                    guard !session.json else { return }
                    Output.lines(Format.programFields(hello))
                }
                return
            }
            try await self.options.withSession { session in
                let request = CurrentUserRequest(seat: self.seat)
                let current =
                    self.quiet ? try await session.client.send(request) : try await session.perform(request)
                guard let user = current.user else {
                    if !self.quiet && !session.json { Output.error("No user is logged in.") }
                    throw ExitCode(Usher.Exit.notLoggedIn)
                }
                guard !self.quiet && !session.json else { return }
                Output.lines(Format.userFields(user))
            }
        }
    }

    struct Users: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "users",
            abstract: "List every user on this device; * marks the active one.",
            discussion: """
                Columns: who (email, else name, else id), state, token state, when the access token expires and \
                when the user last logged in. --long adds the id, provider, kind and next refresh.
                """,
            aliases: ["ls"]
        )

        @OptionGroup var options: GlobalOptions

        @Flag(name: .shortAndLong, help: "Also show each user's id, provider, kind and next refresh.")
        var long = false

        @Flag(help: "Leave out the header line (for scripts).")
        var noHeaders = false

        /// The widest the USER column gets without --long, so that the table fits 80 columns.
        static let userColumnWidth = 32

        func run() async throws {
            try await self.options.withSession { session in
                let list = try await session.perform(ListUsersRequest())
                guard !session.json else { return }
                guard !list.users.isEmpty else {
                    if !self.noHeaders { Output.line("No users on this device.") }
                    return
                }
                let now = Timestamp.now()
                var header = [" ", "USER", "STATE", "TOKEN", "EXPIRES", "LAST LOGIN"]
                if self.long { header += ["ID", "PROVIDER", "KIND", "NEXT REFRESH"] }
                var rows: [[String]] = []
                var colours: [[Terminal.Colour?]] = []
                for user in list.users {
                    let who = Format.who(user)
                    var row = [
                        user.active ? "*" : " ",
                        // An id is never cut: it is what `usher switch` takes.
                        self.long || who == user.id ? who : Self.shortened(who, to: Self.userColumnWidth),
                        Format.state(user.state),
                        user.tokenState.rawValue,
                        user.accessTokenExpiresAt.map { Format.relative($0, now: now) } ?? "-",
                        user.lastLoginAt.map { Format.relative($0, now: now) } ?? "-",
                    ]
                    if self.long {
                        row += [
                            user.id, user.provider, user.kind,
                            user.nextRefreshAt.map { Format.relative($0, now: now) } ?? "-",
                        ]
                    }
                    rows.append(row)
                    colours.append([
                        user.active ? .bold : nil, user.active ? .bold : nil, Self.colour(of: user.state),
                        Self.colour(of: user.tokenState),
                    ])
                }
                Output.lines(
                    Output.table(
                        header: self.noHeaders ? nil : header,
                        rows: rows,
                        colours: colours,
                        paint: Terminal.coloursStandardOutput
                    )
                )
            }
        }

        /// `text` cut to `width` characters, the cut marked with an ellipsis.
        static func shortened(_ text: String, to width: Int) -> String {
            text.count <= width ? text : String(text.prefix(width - 1)) + "…"
        }

        static func colour(of state: UserState) -> Terminal.Colour? {
            state == .loggedIn ? .green : .dim
        }

        static func colour(of state: TokenState) -> Terminal.Colour? {
            switch state {
            case .fresh: nil
            case .refreshing: .yellow
            case .retrying: .red
            case .none: .dim
            }
        }
    }

    struct Switch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "switch",
            abstract: "Make another logged-in user the active user."
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The user's id or email.", completion: UserCompletion.kind)
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

        @Argument(help: "The user's id or email (default: the active user).", completion: UserCompletion.kind)
        var user: String?

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        func run() async throws {
            try await self.options.withSession { session in
                // Looked at first, so that logging out someone already logged out says so.
                let before = try await session.user(for: self.user)
                if let before, before.state == .loggedOut {
                    if session.json {
                        _ = try await session.perform(LogoutRequest(userID: before.id))
                    } else {
                        Output.line("\(Format.who(before)) is already logged out.")
                    }
                    return
                }
                let userID = try await session.userID(for: self.user)
                let result = try await session.perform(LogoutRequest(userID: userID, seat: self.seat))
                guard !session.json else { return }
                if result.user.state == .removed {
                    Output.line("Removed anonymous user \(Terminal.escaped(result.user.id)).")
                } else if result.revoked {
                    Output.line("Logged out \(Format.who(result.user)).")
                } else {
                    Output.line(
                        "Logged out \(Format.who(result.user)); the provider did not confirm that the session was revoked."
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

        @Argument(help: "The user's id or email.", completion: UserCompletion.kind)
        var user: String

        func run() async throws {
            try await self.options.withSession { session in
                let user = try await session.user(for: self.user)
                let result = try await session.perform(RemoveUserRequest(userID: user?.id ?? self.user))
                guard !session.json else { return }
                Output.line("Removed \(user.map(Format.who) ?? Terminal.escaped(result.userID)).")
            }
        }
    }
}
