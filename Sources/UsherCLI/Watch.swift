import ArgumentParser
import UsherClient

extension Usher {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract: "Print events as they happen, until usherd closes the connection or Ctrl-C.",
            discussion: "Events: \(EventName.allCases.map(\.rawValue).joined(separator: ", "))."
        )

        @OptionGroup var options: GlobalOptions

        @Option(
            help: ArgumentHelp(
                "Only these events, comma-separated (default: all). May be repeated.",
                valueName: "names"
            )
        )
        var events: [String] = []

        @Option(
            help: ArgumentHelp("Only events about these seats, comma-separated (default: all).", valueName: "seats")
        )
        var seat: [String] = []

        func validate() throws {
            _ = try self.eventNames()
        }

        private func eventNames() throws -> [EventName]? {
            let names = self.events.flatMap { $0.split(separator: ",") }.map {
                Text.trimmingWhitespace($0)
            }
            guard !names.isEmpty else { return nil }
            return try names.map { name in
                guard let event = EventName(rawValue: name) else {
                    let known = EventName.allCases.map(\.rawValue).joined(separator: ", ")
                    throw ValidationError("Unknown event \"\(name)\"; the events are: \(known).")
                }
                return event
            }
        }

        func run() async throws {
            let names = try self.eventNames()
            try await self.options.withSession { session in
                let seats = self.seat.flatMap { $0.split(separator: ",") }.map { Text.trimmingWhitespace($0) }
                _ = try await session.client.send(SubscribeRequest(events: names, seats: seats.isEmpty ? nil : seats))
                // Users are named by email (or name) rather than by id: the users on the device now, and each one
                // that logs in from here on.
                var known: [String: String] = [:]
                if !session.json {
                    for user in try await session.client.listUsers().users { known[user.id] = Format.who(user) }
                }
                for await event in session.client.events {
                    if session.json {
                        Output.json(event)
                    } else {
                        if case .userLoggedIn(let user) = event.payload { known[user.id] = Format.who(user) }
                        Output.line(Self.describe(event, names: known))
                    }
                }
                // The daemon closed the connection (after `daemon_stopping`, or not): watching is over, and that is
                // success. A broken protocol is not.
                if let reason = session.client.closeReason, reason != .connectionClosed {
                    throw reason
                }
            }
        }

        /// `08:03:58 user_logged_in       gen 4  joe@example.com (u_...)`; `names` maps user ids to what to call
        /// them. The whole line is escaped: every field of an event came from the daemon, some from other uids.
        static func describe(_ event: Event, names: [String: String] = [:], at time: Timestamp = .now()) -> String {
            func who(_ id: String) -> String { names[id] ?? id }
            let width = EventName.allCases.map(\.rawValue.count).max() ?? 0
            let name = event.name.rawValue
            var line = "\(Format.timeOfDay(time)) \(name)\(String(repeating: " ", count: width - name.count))"
            line += "  gen \(event.generation)"
            let details: String
            switch event.payload {
            case .userLoggedIn(let user), .userChanged(let user):
                details = Format.user(user)
            case .activeUserChanged(let previous, let current):
                details = "\(previous.map(who) ?? "none") -> \(current.map(who) ?? "none")"
            case .userLoggedOut(let userID, let reason):
                details = "\(who(userID)) (\(reason.rawValue.replacing("_", with: " ")))"
            case .userRemoved(let userID, let reason):
                details = "\(who(userID)) (\(reason.rawValue.replacing("_", with: " ")))"
            case .tokenRefreshed(let userID, let expiresAt):
                details = "\(who(userID))  expires \(Format.time(expiresAt))"
            case .refreshFailed(let userID, let code, let message, let retryAt):
                details =
                    "\(who(userID))  \(Terminal.escaped(message)) (\(code))"
                    + (retryAt.map { "  retry at \(Format.time($0))" } ?? "")
            case .daemonStopping, .seatRemoved:
                details = ""
            case .seatAdded(let source):
                details = "(\(source))"
            case .switchPending(let previous, let current, let deadline):
                details = "\(previous.map(who) ?? "none") -> \(current.map(who) ?? "none")  by \(Format.time(deadline))"
            case .leaseBroken(let lease, let reason):
                details = "\(lease) (\(Terminal.escaped(reason)))"
            case .seatLocked(let by), .seatUnlocked(let by):
                details = "by \(by)"
            }
            let seat = event.seat.map { "[\($0)] " } ?? ""
            return Terminal.escaped(details.isEmpty && seat.isEmpty ? line : line + "  " + seat + details)
        }
    }
}
