import ArgumentParser
import UsherClient

extension Usher {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show the daemon's version, uptime, users, connections and token refreshes."
        )

        @OptionGroup var options: GlobalOptions

        func run() async throws {
            try await self.options.withSession { session in
                let status = try await session.perform(StatusRequest())
                guard !session.json else { return }
                var refresh = "\(status.refresh.scheduled) scheduled"
                if let next = status.refresh.nextAt { refresh += ", next \(Format.timeWithDistance(next))" }
                Output.lines(
                    Output.fields([
                        ("version", status.version),
                        ("uptime", Format.duration(status.uptimeSeconds)),
                        ("generation", String(status.generation)),
                        ("users", "\(status.users.loggedIn) logged in, \(status.users.loggedOut) logged out"),
                        ("active user", status.activeUserID ?? "none"),
                        ("connections", String(status.connections)),
                        ("refreshes", refresh),
                        ("refresh results", "\(status.refresh.succeeded) succeeded, \(status.refresh.failed) failed"),
                    ])
                )
            }
        }
    }
}
