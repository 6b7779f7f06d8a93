import UsherCore
import UsherProtocol

// Helpers for tests that drive a `SessionRegistry`: in the shared test support, since the core's tests and the
// providers' tests (a local session's whole lifetime through the registry) both use them.

/// Runs `body` while the registry's refresh scheduler runs, as the daemon's token refresher does; stops it after.
package func withRunningScheduler<T: Sendable>(
    _ registry: SessionRegistry,
    _ body: () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: Void.self, returning: T.self) { group in
        group.addTask { await registry.scheduler.run { await registry.deadlineReached(for: $0) } }
        defer { group.cancelAll() }
        return try await body()
    }
}

/// Reads a subscription's events in order.
package struct EventLog {
    private var iterator: AsyncStream<Event>.Iterator
    /// Labels for user ids, so that summaries read `user_logged_in a`.
    package var names: [String: String] = [:]

    package init(_ registry: SessionRegistry) {
        self.iterator = registry.events.subscribe(filter: nil).events.makeAsyncIterator()
    }

    package mutating func next() async -> Event? { await self.iterator.next() }

    /// The next `count` events, each summarised as `<generation> <event> <details>`.
    package mutating func next(_ count: Int) async -> [String] {
        var summaries: [String] = []
        for _ in 0..<count {
            guard let event = await self.iterator.next() else { break }
            summaries.append(self.summary(event))
        }
        return summaries
    }

    package func summary(_ event: Event) -> String {
        func name(_ id: String?) -> String { id.map { self.names[$0] ?? $0 } ?? "nil" }
        let details: String
        switch event.payload {
        case .userLoggedIn(let user), .userChanged(let user): details = name(user.id)
        case .activeUserChanged(let previous, let current): details = "\(name(previous)) -> \(name(current))"
        case .userLoggedOut(let id, let reason): details = "\(name(id)) \(reason.rawValue)"
        case .userRemoved(let id, _): details = name(id)
        case .tokenRefreshed(let id, _): details = name(id)
        case .refreshFailed(let id, let code, _, _): details = "\(name(id)) \(code)"
        case .daemonStopping, .seatRemoved: details = ""
        case .seatAdded(let source): details = source
        case .switchPending(let previous, let current, _): details = "\(name(previous)) -> \(name(current))"
        case .leaseBroken(let lease, let reason): details = "\(lease) \(reason)"
        case .seatLocked(let by), .seatUnlocked(let by): details = by
        }
        // Events about a seat other than the default one say which.
        if let seat = event.seat, seat != "seat0" {
            return "\(event.generation) \(event.name.rawValue) \(seat) \(details)"
        }
        return "\(event.generation) \(event.name.rawValue) \(details)"
    }
}

extension Timestamp {
    /// `seconds` later.
    package func adding(seconds: Int64) -> Timestamp { self.adding(milliseconds: seconds * 1000) }
}
