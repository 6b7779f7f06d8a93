import Crypto
import Foundation
import Logging
import NIOPosix
import ServiceLifecycle
import UsherCore
import UsherProviders
import UsherServer
import UsherStore
import UsherTestSupport

/// The real `SocketServer` and dispatcher over a real registry (in-memory store, one local provider, a manual clock),
/// listening on a temporary socket in this process.
///
/// For limits and fairness, where a spawned daemon would make a test depend on process start-up and scheduling: the
/// test can set limits a configuration file does not allow (an idle timeout of milliseconds) and read the server's
/// own counters.
final class InProcessServer: Sendable {
    let directory: TestDirectory
    let socketPath: String
    let settings: ServerSettings
    let tracker: ConnectionTracker
    let registry: SessionRegistry

    private init(
        directory: TestDirectory,
        settings: ServerSettings,
        tracker: ConnectionTracker,
        registry: SessionRegistry
    ) {
        self.directory = directory
        self.socketPath = directory.file("usher.sock")
        self.settings = settings
        self.tracker = tracker
        self.registry = registry
    }

    static let logger = Logger(label: "usherd-test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A registry over an in-memory database with one local provider (anonymous logins allowed).
    static func makeRegistry(seats: SeatConfiguration = SeatConfiguration()) async throws -> SessionRegistry {
        let database = try AppDatabase.inMemory()
        let clock = ManualClock()
        let provider = LocalProvider(
            name: "local",
            configuration: LocalProviderConfiguration(issuer: "usherd:local"),
            database: database,
            signer: TokenSigner(privateKey: P256.Signing.PrivateKey()),
            hasher: PasswordHasher(
                threadPool: NIOThreadPool.singleton,
                parameters: .init(logN: 4, blockSize: 1, parallelism: 1)
            ),
            clock: clock
        )
        let registry = SessionRegistry(
            store: database,
            providers: [provider],
            defaultProvider: "local",
            seats: seats,
            clock: clock,
            logger: Self.logger
        )
        try await registry.load()
        return registry
    }

    /// Starts a server with `limits` and `rules` (the socket is `mode`, its directory reachable by everyone, so that
    /// other uids can connect), runs `body`, and stops the server. Connections log to `logger`, audit records go to
    /// `auditLog` (written when the test flushes it), `logBudget` counts each uid's records, and `answerObserver` is
    /// told of each answer as the server writes it.
    static func with<T: Sendable>(
        limits: ServerLimits = ServerLimits(),
        rules: [AccessRule] = [],
        mode: UInt32 = 0o666,
        seats: SeatConfiguration = SeatConfiguration(),
        seatOfPeer: @escaping @Sendable (PeerCredentials) -> String? = { _ in nil },
        logger: Logger = InProcessServer.logger,
        auditLog: AuditLog? = nil,
        logBudget: PeerLogBudget? = nil,
        answerObserver: (@Sendable (_ uid: UInt32, _ answeredSoFar: Int) -> Void)? = nil,
        _ body: @Sendable (InProcessServer) async throws -> T
    ) async throws -> T {
        let directory = try TestDirectory()
        defer { directory.remove() }
        chmod(directory.path, 0o711)
        let tracker = ConnectionTracker(answerObserver: answerObserver)
        let settings = ServerSettings(
            limits: limits,
            policy: AccessPolicy(daemonUID: getuid(), rules: rules),
            seatOfPeer: seatOfPeer
        )
        let registry = try await Self.makeRegistry(seats: seats)
        let dispatcher = Dispatcher(
            registry: registry,
            version: "test",
            settings: settings,
            auditLog: auditLog ?? AuditLog(),
            logBudget: logBudget,
            connectionCount: { tracker.count }
        )
        let server = InProcessServer(directory: directory, settings: settings, tracker: tracker, registry: registry)
        let socket = try await SocketServer.bind(
            .path(server.socketPath, mode: mode),
            dispatcher: dispatcher,
            tracker: tracker,
            logger: logger
        )
        return try await Self.serve(socket) { try await body(server) }
    }

    /// Runs `socket` while `body` runs, then stops it the way the daemon does (graceful shutdown: no new
    /// connections, inputs closed, answers written, stragglers closed after the grace period), so that no test can
    /// leave connections behind that keep the server running.
    static func serve<T: Sendable>(_ socket: SocketServer, _ body: () async throws -> T) async throws -> T {
        let services = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [.init(service: socket)], logger: Self.logger)
        )
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            let result: Result<T, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            return try result.get()
        }
    }

    /// A connection from this process (root, when the tests run as root), whose reads wait up to a minute (a hang
    /// guard: the tests share a loaded machine).
    func connect() throws -> LineConnection {
        let connection = try LineConnection(path: self.socketPath)
        connection.timeout = .seconds(60)
        return connection
    }

    /// A connection whose peer is `uid` (see `OtherUser`).
    func connect(asUID uid: UInt32) async throws -> LineConnection {
        let connection = try await OtherUser.connect(path: self.socketPath, uid: uid, gid: uid)
        connection.timeout = .seconds(60)
        return connection
    }
}
