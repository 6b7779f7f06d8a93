import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import UsherCore
import UsherProviders
import UsherServer
import UsherStore

/// The daemon's version, reported by `hello` and `status`.
package let usherdVersion = "0.1.0"

package enum StartupError: Error, CustomStringConvertible {
    case stateDirectory(path: String, reason: String)

    package var description: String {
        switch self {
        case .stateDirectory(let path, let reason): "state directory \(path): \(reason)"
        }
    }
}

/// Wires the configured pieces together and runs them as services of one `ServiceGroup`.
package struct Daemon {
    package var configuration: DaemonConfiguration
    package var socketPath: String
    package var stateDirectory: String
    package var logger: Logger

    package init(configuration: DaemonConfiguration, socketPath: String, stateDirectory: String, logger: Logger) {
        self.configuration = configuration
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.logger = logger
    }

    /// Runs until SIGTERM or SIGINT. Startup failures throw before anything is served.
    package func run() async throws {
        try Self.prepareStateDirectory(self.stateDirectory)
        let database = try AppDatabase(path: "\(self.stateDirectory)/usher.sqlite")
        let signer = try TokenSigner.loadOrCreate(at: "\(self.stateDirectory)/signing-key.pem")
        let clock = SystemClock()
        _ = try await database.purgeExpiredRefreshGrants(now: clock.now())

        // Password hashing is CPU-heavy: it gets threads of its own, off the event loops and the cooperative pool.
        let hashingPool = NIOThreadPool(numberOfThreads: max(1, min(4, System.coreCount)))
        hashingPool.start()
        do {
            try await self.serve(
                database: database,
                signer: signer,
                hasher: PasswordHasher(threadPool: hashingPool),
                clock: clock
            )
        } catch {
            try? await hashingPool.shutdownGracefully()
            throw error
        }
        try? await hashingPool.shutdownGracefully()
    }

    private func serve(
        database: AppDatabase,
        signer: TokenSigner,
        hasher: PasswordHasher,
        clock: SystemClock
    ) async throws {

        let providers: [any IdentityProvider] = self.configuration.providers.map { provider in
            switch provider {
            case .local(let name, let localConfiguration):
                LocalProvider(
                    name: name,
                    configuration: localConfiguration,
                    database: database,
                    signer: signer,
                    hasher: hasher,
                    clock: clock
                )
            }
        }
        let registry = SessionRegistry(
            store: database,
            providers: providers,
            defaultProvider: self.configuration.defaultProvider,
            configuration: RegistryConfiguration(
                refreshMarginMilliseconds: self.configuration.refreshMarginMilliseconds
            ),
            clock: clock,
            logger: self.logger
        )
        try await registry.load()

        let tracker = ConnectionTracker()
        let dispatcher = Dispatcher(
            registry: registry,
            version: usherdVersion,
            maximumJSONDepth: self.configuration.limits.maximumJSONDepth,
            connectionCount: { tracker.count }
        )
        let server = try await SocketServer.bind(
            .path(self.socketPath, mode: self.configuration.socketMode),
            limits: self.configuration.limits,
            dispatcher: dispatcher,
            policy: AccessPolicy(daemonUID: getuid()),
            tracker: tracker,
            logger: self.logger
        )
        self.logger.info(
            "usherd \(usherdVersion) listening",
            metadata: ["socket": "\(self.socketPath)", "state_directory": "\(self.stateDirectory)"]
        )

        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: server),
                    .init(service: RefreshService(registry: registry)),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: self.logger
            )
        )
        try await group.run()
        self.logger.info("usherd stopped")
    }

    /// Creates the state directory (0700) when missing, and refuses one that others could tamper with.
    static func prepareStateDirectory(_ path: String) throws {
        var components: [String] = []
        for component in path.split(separator: "/") {
            components.append(String(component))
            let partial = (path.hasPrefix("/") ? "/" : "") + components.joined(separator: "/")
            if mkdir(partial, 0o700) != 0, errno != EEXIST {
                throw StartupError.stateDirectory(
                    path: path,
                    reason: "cannot create \(partial): \(String(cString: strerror(errno)))"
                )
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw StartupError.stateDirectory(path: path, reason: String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw StartupError.stateDirectory(path: path, reason: "not a directory")
        }
        guard info.st_uid == geteuid() else {
            throw StartupError.stateDirectory(
                path: path,
                reason: "owned by uid \(info.st_uid), not by the daemon's uid \(geteuid()); refusing to use it"
            )
        }
        guard info.st_mode & 0o022 == 0 else {
            throw StartupError.stateDirectory(
                path: path,
                reason: "writable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); "
                    + "run chmod 700 on it"
            )
        }
    }
}

/// Runs the refresh scheduler: one loop for every user's token deadlines.
struct RefreshService: Service {
    let registry: SessionRegistry

    func run() async throws {
        let registry = self.registry
        await cancelWhenGracefulShutdown {
            await registry.scheduler.run { userID in await registry.deadlineReached(for: userID) }
        }
    }
}
