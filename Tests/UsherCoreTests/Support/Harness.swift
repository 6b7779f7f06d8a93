import Logging
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// A session registry over an in-memory SQLite database (whose commits a test can make fail), scripted providers and
/// a manual clock.
struct Harness {
    let clock: ManualClock
    let database: AppDatabase
    /// The registry's store: the database, with commits that fail on demand.
    let store: FailingStore
    let providers: [ScriptedProvider]
    let configuration: RegistryConfiguration
    let seats: SeatConfiguration
    let leases: LeaseConfiguration
    let registry: SessionRegistry
    /// What the registry logged.
    let logs = LogRecorder()

    /// The default provider.
    var provider: ScriptedProvider { self.providers[0] }

    /// Tests never bootstrap logging; the registry logs nowhere.
    static let logger = Logger(label: "usher.tests", factory: { _ in SwiftLogNoOpLogHandler() })

    init(
        providerNames: [String] = ["scripted"],
        refreshMarginMilliseconds: Int64 = 300_000,
        accessLifetimeMilliseconds: Int64 = 3_600_000,
        refreshLifetimeMilliseconds: Int64? = nil,
        seats: SeatConfiguration = SeatConfiguration(),
        leases: LeaseConfiguration = LeaseConfiguration()
    ) async throws {
        self.seats = seats
        self.leases = leases
        let clock = ManualClock()
        self.clock = clock
        self.database = try AppDatabase.inMemory()
        self.store = FailingStore(self.database)
        self.providers = providerNames.map { ScriptedProvider(name: $0, clock: clock) }
        for provider in self.providers {
            provider.setLifetimes(
                accessMilliseconds: accessLifetimeMilliseconds,
                refreshMilliseconds: refreshLifetimeMilliseconds
            )
        }
        self.configuration = RegistryConfiguration(refreshMarginMilliseconds: refreshMarginMilliseconds)
        self.registry = Self.makeRegistry(
            store: self.store,
            providers: self.providers,
            configuration: self.configuration,
            seats: seats,
            leases: leases,
            clock: clock,
            logger: self.logs.logger
        )
        try await self.registry.load()
    }

    private static func makeRegistry(
        store: any SessionStore,
        providers: [ScriptedProvider],
        configuration: RegistryConfiguration,
        seats: SeatConfiguration,
        leases: LeaseConfiguration,
        clock: ManualClock,
        logger: Logger = Self.logger
    ) -> SessionRegistry {
        SessionRegistry(
            store: store,
            providers: providers,
            defaultProvider: providers[0].name,
            configuration: configuration,
            seats: seats,
            leaseConfiguration: leases,
            clock: clock,
            logger: logger
        )
    }

    /// A second registry on the same database, as after a daemon restart; `load()` is the caller's to call.
    func restartedRegistry() -> SessionRegistry {
        Self.makeRegistry(
            store: self.database,
            providers: self.providers,
            configuration: self.configuration,
            seats: self.seats,
            leases: self.leases,
            clock: self.clock
        )
    }

    static func credentials(_ email: String, password: String = "ok") -> [String: JSONValue] {
        ["type": "email_password", "email": .string(email), "password": .string(password)]
    }

    @discardableResult
    func login(_ email: String, provider: String? = nil) async throws -> UserInfo {
        try await self.registry.login(provider: provider, credentials: Self.credentials(email)).user
    }

    @discardableResult
    func loginAnonymously(provider: String? = nil) async throws -> UserInfo {
        try await self.registry.login(provider: provider, credentials: ["type": "anonymous"]).user
    }

    func users() async -> [UserInfo] { await self.registry.listUsers().users }

    func user(_ id: String) async -> UserInfo? { await self.users().first { $0.id == id } }

    func activeID() async -> String? { await self.registry.currentUser().user?.id }

    func generation() async -> Int64 { await self.registry.currentGeneration }

    /// The tokens as the database holds them.
    func storedTokens(_ id: String) async throws -> TokenSet? {
        try await self.database.loadSessions().users.first { $0.id == id }?.tokens
    }
}

/// Polls `condition` until it holds; records an issue and returns false after `timeout` of real time.
func waitUntil(
    _ what: Comment,
    timeout: Duration = hangGuard,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !(await condition()) {
        if ContinuousClock.now >= deadline {
            Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
            return false
        }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// Waits until the refresh scheduler's loop sleeps on `clock` and stays asleep for a few polls in a row.
///
/// The loop may sleep briefly and wake at once (a deadline scheduled before it started leaves a wake-up pending), so
/// one sleeper seen once does not yet mean it is idle.
func waitUntilSleeping(
    _ clock: ManualClock,
    sourceLocation: SourceLocation = #_sourceLocation
) async -> Bool {
    var settled = 0
    return await waitUntil("the scheduler sleeps", sourceLocation: sourceLocation) {
        settled = clock.sleeperCount == 1 ? settled + 1 : 0
        return settled >= 5
    }
}

/// Checks that `current_user` and the `active` flags of `list_users` agree, and that there is exactly one active user
/// while anyone is logged in.
func expectConsistentActiveUser(
    _ registry: SessionRegistry,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let users = await registry.listUsers().users
    let current = await registry.currentUser().user
    let active = users.filter(\.active)
    if users.contains(where: { $0.state == .loggedIn }) {
        #expect(active.count == 1, sourceLocation: sourceLocation)
        #expect(active.first?.state == .loggedIn, sourceLocation: sourceLocation)
        #expect(current?.id == active.first?.id, sourceLocation: sourceLocation)
    } else {
        #expect(active.isEmpty, sourceLocation: sourceLocation)
        #expect(current == nil, sourceLocation: sourceLocation)
    }
}
