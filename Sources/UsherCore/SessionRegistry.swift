import Logging
import UsherProtocol

/// Tunables of the registry that come from configuration.
package struct RegistryConfiguration: Sendable {
    /// `[tokens] refresh_margin`: how long before expiry a token is refreshed (capped at half its lifetime).
    package var refreshMarginMilliseconds: Int64
    /// How long after start overdue refreshes are spread over, at most.
    package var startupSpreadMilliseconds: Int64

    package init(refreshMarginMilliseconds: Int64 = 300_000, startupSpreadMilliseconds: Int64 = 30_000) {
        self.refreshMarginMilliseconds = refreshMarginMilliseconds
        self.startupSpreadMilliseconds = startupSpreadMilliseconds
    }

    var deadlines: TokenDeadlines { TokenDeadlines(refreshMarginMilliseconds: self.refreshMarginMilliseconds) }
}

/// The authoritative multi-user session state: which users are on the device, their states, which one is active,
/// their tokens, and when each token is refreshed.
///
/// Changes are computed one at a time on this actor from its working state, and committed to the store in batches
/// (`SessionRegistry+Commit.swift`): a change is answered only once its batch is on disk, and only then published to
/// `view`, which answers reads without entering the actor. Each concern is a file `SessionRegistry+Concern.swift`;
/// the state of a concern that outlives one call (gates, flights, delays) is a value type of its own, tested without
/// the actor (`SeatGates`, `IdentityGates`, `Flights`, `RecentRefreshes`).
package actor SessionRegistry {
    /// Where the registry is in its life: every entry point checks it.
    package enum Lifecycle: Sendable {
        /// Created; `load()` has not finished. Nothing is served yet.
        case loading
        /// Loaded: changes are accepted, refreshes run.
        case running
        /// The daemon is stopping: requests already being answered finish, new changes and refreshes are refused.
        case stopping
    }

    package private(set) var lifecycle = Lifecycle.loading
    /// The state changes are computed from: the published state plus any batch being committed.
    var state = SessionState()
    /// Changes waiting for their batch, and whether a batch is being committed (`+Commit`).
    var queue: [PendingChange] = []
    var committing = false
    var tokenStatus: TokenStatusTable
    /// Refreshes under way, per user, and who waits for their tokens (single flight, `+Tokens`).
    var refreshFlights = Flights<String, CheckedContinuation<TokenSet, any Error>>()
    /// Narrowings under way that use a user's refresh token, and who waits for them to end (`+Narrowing`).
    var refreshTokenNarrowings = Flights<String, CheckedContinuation<Void, Never>>()
    /// Narrowings under way, per cache key, and who waits for their token (single flight, `+Narrowing`).
    var narrowingFlights = Flights<NarrowedTokenCache.Key, CheckedContinuation<NarrowedToken, any Error>>()
    /// Each user's last refresh, for about a second (`+TokenRequests`, `refresh`).
    var recentRefreshes = RecentRefreshes()
    var refreshesSucceeded: Int64 = 0
    var refreshesFailed: Int64 = 0
    private(set) var providers: [String: any IdentityProvider]
    private(set) var providerOrder: [String]
    private(set) var defaultProviderName: String
    private(set) var configuration: RegistryConfiguration
    /// `[seats]`: which seats there are, and the default one.
    let seatConfiguration: SeatConfiguration
    /// `[leases]`: how long a delay lease holds a change back, how many leases a uid may hold.
    var leaseConfiguration: LeaseConfiguration
    /// Every known seat: where it comes from, whether it is there now (`+Seats`).
    var seatDirectory: [String: SessionView.SeatEntry] = [:]
    /// One gate per seat: changes of a seat's active user wait for its leases one after the other, in order; and the
    /// delays the seat's delay leases were given (`+Seats`, `+Leases`).
    var seatGates = SeatGates<CheckedContinuation<Void, Never>>()
    /// Seat assignments known but not yet in the store (loaded from a database from before seats): written with the
    /// next commit.
    var unrecordedSeats: [String: String?] = [:]
    /// One gate per identity a login or link is resolving and committing, and the epoch that moves whenever a
    /// committed change takes an identity from its owner (see `resolveOwner`).
    var identityGates = IdentityGates<CheckedContinuation<Void, Never>>()
    /// The login sessions `open_session` bound to users, by id and by logind session (`+SessionBindings`).
    var sessionBindings = SessionBindingTable()
    /// Where seat locks and PINs are kept and how PINs are hashed (`+Locks`); nil until the daemon gives them.
    var seatLockParts: SeatLockParts?

    let store: any SessionStore
    let clock: any SessionClock
    let logger: Logger
    package nonisolated let events: EventHub
    package nonisolated let scheduler: RefreshScheduler
    /// The committed state, for readers on any thread.
    package nonisolated let view: SessionView
    /// The leases held now (`+Leases`).
    package nonisolated let leases: LeaseBook
    /// The narrowed tokens handed out (`+Narrowing`), read on the event loop by `access_token`.
    package nonisolated let narrowed = NarrowedTokenCache()

    package init(
        store: any SessionStore,
        providers: [any IdentityProvider],
        defaultProvider: String,
        configuration: RegistryConfiguration = RegistryConfiguration(),
        seats: SeatConfiguration = SeatConfiguration(),
        leaseConfiguration: LeaseConfiguration = LeaseConfiguration(),
        clock: any SessionClock = SystemClock(),
        events: EventHub = EventHub(),
        logger: Logger
    ) {
        self.store = store
        self.providers = Dictionary(providers.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.providerOrder = providers.map(\.name)
        self.defaultProviderName = defaultProvider
        self.configuration = configuration
        self.seatConfiguration = seats
        self.leaseConfiguration = leaseConfiguration
        self.leases = LeaseBook()
        self.clock = clock
        self.events = events
        self.scheduler = RefreshScheduler(clock: clock)
        let view = SessionView(clock: clock)
        self.view = view
        self.tokenStatus = TokenStatusTable(view: view)
        self.logger = logger
        view.publish(deadlines: configuration.deadlines)
    }

    // MARK: - Lifecycle

    /// Loads the durable state, logs out users whose refresh token expired while the daemon was down, and schedules
    /// every other logged-in user's refresh (overdue ones spread over the next seconds).
    package func load() async throws {
        guard self.lifecycle == .loading else { return }
        let persisted = try await self.store.loadSessions()
        self.state = SessionState(generation: persisted.generation, users: persisted.users)
        self.state.defaultSeat = self.seatConfiguration.defaultSeat
        self.restoreSeats(persisted.seats)
        try await self.loadSessionBindings()
        self.view.publish(self.state)
        self.lifecycle = .running
        let now = self.clock.now()
        let expired = self.state.users.filter { user in
            user.state == .loggedIn && (user.tokens.flatMap(TokenDeadlines.sessionEnd).map { $0 <= now } ?? false)
        }
        if !expired.isEmpty {
            try await self.mutate { draft in
                for user in expired { self.endSession(of: user, reason: .refreshTokenExpired, in: &draft) }
            }
        }
        let deadlines = self.configuration.deadlines
        var overdue: [String] = []
        self.scheduler.reserveCapacity(self.state.loggedInCount)
        for user in self.state.users where user.state == .loggedIn {
            if let deadline = deadlines.nextDeadline(for: user), deadline <= now {
                overdue.append(user.id)
            } else {
                self.scheduleTimer(for: user)
            }
        }
        // Spread overdue refreshes so a restart with many users never becomes a refresh storm.
        let spread = min(self.configuration.startupSpreadMilliseconds, Int64(overdue.count) * 20 + 1000)
        for userID in overdue.shuffled() {
            let deadline = now.adding(milliseconds: Int64.random(in: 0...spread))
            self.tokenStatus[userID, default: TokenStatus()].nextRefreshAt = deadline
            self.scheduler.schedule(userID, at: deadline)
        }
        self.logger.info(
            "loaded session state",
            metadata: [
                "generation": "\(self.state.generation)", "users": "\(self.state.count)",
                "users.overdue": "\(overdue.count)", "users.expired": "\(expired.count)",
            ]
        )
    }

    /// Tells every subscriber the daemon is stopping, and ends their subscriptions. From here on, new changes and
    /// refreshes are refused; changes already queued are still committed.
    package func announceStopping() {
        self.lifecycle = .stopping
        self.events.finish(with: Event(generation: self.view.generation, .daemonStopping))
        // Leases die with the daemon: a change waiting for delay leases goes on now rather than hold up the stop.
        self.leases.releaseEverything()
    }

    /// Throws unless the registry accepts new work.
    func requireRunning() throws(SessionError) {
        switch self.lifecycle {
        case .running: return
        case .loading: throw .notReady
        case .stopping: throw .stopping
        }
    }

    // MARK: - Reads (the socket server answers these from `view` without entering the actor)

    package var currentGeneration: Int64 { self.view.generation }

    package func currentUser() -> ActiveUser { self.view.currentUser() }

    /// Every user, in the order they were added.
    package func listUsers() -> UserPage { self.view.listUsers() }

    /// The registry at a glance (`status`, systemd's status line).
    package struct Snapshot: Sendable {
        package var generation: Int64
        package var loggedIn: Int
        package var loggedOut: Int
        package var activeUserID: String?
        package var activeUserLabel: String?
        package var refresh: Refreshes
    }

    /// The timer queue's refreshes: how many are scheduled, the earliest, and how many ran since start.
    package struct Refreshes: Sendable, Hashable {
        package var scheduled: Int
        package var nextAt: Timestamp?
        package var succeeded: Int64
        package var failed: Int64
    }

    package func snapshot() -> Snapshot {
        let counts = self.view.counts()
        return Snapshot(
            generation: counts.generation,
            loggedIn: counts.loggedIn,
            loggedOut: counts.total - counts.loggedIn,
            activeUserID: counts.activeUserID,
            activeUserLabel: counts.label,
            refresh: Refreshes(
                scheduled: self.scheduler.scheduledCount,
                nextAt: self.scheduler.earliestDeadline(),
                succeeded: self.refreshesSucceeded,
                failed: self.refreshesFailed
            )
        )
    }

    /// Subscribes to events. The answer's generation and the subscription are taken together: events are published
    /// on this actor right after the change is published to the view, so the subscriber receives exactly the changes
    /// after that generation.
    package func subscribe(filter: Set<EventName>?) -> (generation: Int64, subscription: EventHub.Subscription) {
        (self.view.generation, self.events.subscribe(filter: filter))
    }

    /// Subscribes a socket connection: events as encoded lines, bounded by `maximumPendingBytes` unsent.
    package func subscribeLines(
        filter: Set<EventName>?,
        seats: Set<String>? = nil,
        seatedOnly: Bool = false,
        format: EventLineFormat,
        maximumPendingBytes: Int,
        onOverflow: @escaping @Sendable () -> Void
    ) -> (generation: Int64, subscription: EventHub.LineSubscription) {
        let subscription = self.events.subscribeLines(
            filter: filter,
            seats: seats,
            seatedOnly: seatedOnly,
            unnamedSeat: self.seatConfiguration.namesSeats ? nil : self.state.defaultSeat,
            format: format,
            maximumPendingBytes: maximumPendingBytes,
            onOverflow: onOverflow
        )
        return (self.view.generation, subscription)
    }

    /// Replaces the providers and the configuration (a reload).
    func replaceProviders(
        _ providers: [any IdentityProvider],
        defaultProvider: String,
        configuration: RegistryConfiguration
    ) {
        self.providers = Dictionary(providers.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.providerOrder = providers.map(\.name)
        self.defaultProviderName = defaultProvider
        let marginChanged = configuration.refreshMarginMilliseconds != self.configuration.refreshMarginMilliseconds
        self.configuration = configuration
        guard marginChanged else { return }
        // Every deadline follows the new margin: shown and scheduled alike.
        self.view.publish(deadlines: configuration.deadlines)
        for user in self.state.users where user.state == .loggedIn { self.scheduleTimer(for: user) }
    }

    /// A user as clients see it, from the working state (used inside changes, for events).
    func info(_ user: User) -> UserInfo {
        UserInfo(
            user,
            status: self.tokenStatus[user.id]?.view,
            active: self.state.seats.seat(of: user.id) != nil,
            deadlines: self.configuration.deadlines
        )
    }

    /// The user a request names, or the seat's active user (nil: the default seat's) when it names none.
    func resolve(_ userID: String?, seat: String? = nil) throws(SessionError) -> User {
        guard let id = userID ?? self.state.seats.user(on: seat ?? self.state.defaultSeat) else { throw .noActiveUser }
        guard let user = self.state[id] else { throw .userNotFound(id) }
        return user
    }

    func loggedIn(_ userID: String?, seat: String? = nil) throws(SessionError) -> User {
        let user = try self.resolve(userID, seat: seat)
        guard user.state == .loggedIn, user.tokens != nil else { throw .userLoggedOut(user.id) }
        return user
    }
}
