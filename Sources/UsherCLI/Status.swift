import ArgumentParser
import UsherClient

extension Usher {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show who is active, who is logged in and whose token is in trouble, then the daemon's counters.",
            discussion: """
                --check prints nothing: exit 0 when a user is active and its access token has not expired, 4 when \\
                no user is logged in, 1 when the active user's token has expired (its refresh keeps failing), 3 when \\
                usherd cannot be reached.
                """
        )

        @OptionGroup var options: GlobalOptions

        @Flag(help: "Print nothing; the exit status says whether the active user has a valid token.")
        var check = false

        /// How many users a line names before it says how many more there are.
        static let namesPerLine = 5

        func run() async throws {
            try await self.options.withSession { session in
                if self.check { return try await Self.check(session) }
                let status = try await session.perform(StatusRequest())
                guard !session.json else { return }
                let users = try await session.client.listUsers().users
                Output.lines(Self.lines(status, users, paint: Terminal.coloursStandardOutput))
            }
        }

        /// `--check`: the exit status alone.
        static func check(_ session: Session) async throws {
            guard let user = try await session.client.send(CurrentUserRequest()).user else {
                throw ExitCode(Usher.Exit.notLoggedIn)
            }
            if let expiresAt = user.accessTokenExpiresAt,
                expiresAt.millisecondsSinceEpoch <= Timestamp.now().millisecondsSinceEpoch
            {
                throw ExitCode(Usher.Exit.failure)
            }
        }

        /// People first (the active user, who is logged in, whose token is in trouble), then the daemon.
        static func lines(_ status: StatusRequest.Result, _ users: [UserInfo], paint: Bool) -> [String] {
            let loggedIn = users.filter { $0.state == .loggedIn }
            let trouble = users.filter {
                $0.tokenState == .retrying || $0.lastRefreshError != nil && $0.state == .loggedIn
            }
            var pairs: [(String, String)] = []
            let active = users.first(where: \.active)
            pairs.append(("active user", active.map(Format.who) ?? Terminal.paint("none", .dim, enabled: paint)))
            pairs.append(("logged in", Self.names(loggedIn, total: status.users.loggedIn)))
            if status.users.loggedOut > 0 { pairs.append(("logged out", String(status.users.loggedOut))) }
            for user in trouble {
                pairs.append(
                    (
                        "token trouble",
                        Terminal.paint("\(Format.who(user)): \(Format.tokenSummary(user))", .red, enabled: paint)
                    )
                )
            }
            var refresh = "\(status.refresh.scheduled) scheduled"
            if let next = status.refresh.nextAt { refresh += ", next \(Format.relative(next))" }
            refresh += "; \(status.refresh.succeeded) succeeded, \(status.refresh.failed) failed"
            pairs.append(
                ("daemon", "usherd \(Terminal.escaped(status.version)), up \(Format.duration(status.uptimeSeconds))")
            )
            pairs.append(("connections", String(status.connections)))
            pairs.append(("refreshes", refresh))
            pairs.append(("generation", String(status.generation)))
            return Output.fields(pairs)
        }

        /// `joe@example.com, ann@example.com and 3 more`, or `none`.
        static func names(_ users: [UserInfo], total: Int64) -> String {
            guard !users.isEmpty else { return "none" }
            var text = users.prefix(self.namesPerLine).map(Format.who).joined(separator: ", ")
            let more = max(Int(total), users.count) - min(users.count, self.namesPerLine)
            if more > 0 { text += " and \(more) more" }
            return text
        }
    }
}
