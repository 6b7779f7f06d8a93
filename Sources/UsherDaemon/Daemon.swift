import CUsherLinux
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import UsherCore
import UsherHTTP
import UsherProtocol
import UsherProviders
import UsherServer
import UsherStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The daemon's version, reported by `hello`, `status` and `--version`: the VERSION file's text (`usherVersion` is
/// generated from it by the VersionPlugin).
package let usherdVersion = usherVersion

/// Wires the configured pieces together and runs them as services of one `ServiceGroup`.
package struct Daemon {
    package var configuration: DaemonConfiguration
    /// The configuration file, re-read on SIGHUP; nil when the daemon runs on defaults.
    package var configurationPath: String?
    package var socketPath: String
    package var stateDirectory: String
    /// The resolved token encryption key file, when one is configured.
    package var tokenKeyPath: String?
    package var logger: Logger
    let logLevel: LogLevelSetting

    init(
        configuration: DaemonConfiguration,
        configurationPath: String?,
        socketPath: String,
        stateDirectory: String,
        tokenKeyPath: String?,
        logLevel: LogLevelSetting,
        logger: Logger
    ) {
        self.tokenKeyPath = tokenKeyPath
        self.configuration = configuration
        self.configurationPath = configurationPath
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.logLevel = logLevel
        self.logger = logger
    }

    /// Runs until SIGTERM or SIGINT. Start-up failures throw before anything is served.
    package func run() async throws {
        try Systemd.requireLibraryWhenAsked()
        try self.checkUIDRangeAgainstLoginDefs()
        // Opening the database may run migrations: ask systemd for time before doing it.
        Systemd.extendTimeout(seconds: 90)
        let safety = FileSafety(logger: self.logger)
        try safety.refuseRewritableFiles(of: self.configuration, path: self.configurationPath)
        try safety.prepareStateDirectory(self.stateDirectory)
        // Held until this function returns (and by the kernel until the process is gone): one daemon per state
        // directory. Taken before any state file is repaired or opened.
        let lock = try StateDirectoryLock(directory: self.stateDirectory, safety: safety)
        defer { withExtendedLifetime(lock) {} }
        try safety.checkStateFiles(in: self.stateDirectory)
        safety.warnAboutReadableSecrets(of: self.configuration)
        let cipher = try self.tokenKeyPath.map { path in
            try TokenCipher(keyFileContents: safety.readKeyFile(path, role: "token encryption key"), path: path)
        }
        let database = try AppDatabase(path: "\(self.stateDirectory)/usher.sqlite", cipher: cipher)
        let signer = try TokenSigner.loadOrCreate(at: "\(self.stateDirectory)/signing-key.pem")
        let clock = SystemClock()
        _ = try await database.purgeExpiredRefreshGrants(now: clock.now())
        _ = try await database.purgeExpiredAccountTokens(now: clock.now())

        // Password hashing is CPU-heavy: it gets threads of its own, off the event loops and the cooperative pool.
        let hashingPool = NIOThreadPool(numberOfThreads: max(1, min(4, System.coreCount)))
        hashingPool.start()
        // One HTTP transport for every provider (OpenID Connect, JWK sets, introspection): its connections are kept
        // and reused across them.
        let httpClient = HTTPTransport()
        let parts = ProviderParts(
            database: database,
            signer: signer,
            hasher: PasswordHasher(
                threadPool: hashingPool,
                parameters: PasswordHasher.Parameters(
                    logN: self.configuration.passwordHashCost,
                    blockSize: PasswordHasher.Parameters.standard.blockSize,
                    parallelism: PasswordHasher.Parameters.standard.parallelism
                )
            ),
            clock: clock,
            httpClient: httpClient,
            logger: self.logger
        )
        do {
            try await self.serve(parts)
        } catch {
            httpClient.shutdown()
            try? await hashingPool.shutdownGracefully()
            throw error
        }
        httpClient.shutdown()
        try? await hashingPool.shutdownGracefully()
    }

    /// What every provider instance is built from; kept so that a reload can build new ones.
    struct ProviderParts: Sendable {
        var database: AppDatabase
        var signer: TokenSigner
        var hasher: PasswordHasher
        var clock: SystemClock
        /// Shared by every provider; shut down when the daemon stops.
        var httpClient: HTTPTransport
        var logger: Logger
        /// OpenID Connect providers outlive a reload that keeps their settings (discovery, logins under way).
        var oidc = OIDCProviders()

        func providers(for configuration: DaemonConfiguration) -> [any IdentityProvider] {
            let providers: [any IdentityProvider] = configuration.providers.map { provider in
                switch provider {
                case .local(let name, let localConfiguration):
                    LocalProvider(
                        name: name,
                        configuration: localConfiguration,
                        database: self.database,
                        signer: self.signer,
                        hasher: self.hasher,
                        clock: self.clock,
                        httpClient: self.httpClient,
                        logger: self.logger
                    )
                case .oidc(let name, let oidcConfiguration):
                    self.oidc.provider(
                        name: name,
                        configuration: oidcConfiguration,
                        httpClient: self.httpClient,
                        clock: self.clock,
                        logger: self.logger
                    )
                }
            }
            self.oidc.retire(except: providers.compactMap { $0 as? OIDCProvider })
            return providers
        }
    }

    private func serve(_ parts: ProviderParts) async throws {
        // `[unix_users]`: each user's Unix account is allocated as the user is added, in the same transaction.
        let unixUsers =
            self.configuration.unixUsers.enabled
            ? UnixUserDirectory(
                settings: self.configuration.unixUsers.settings,
                localAccounts: { LocalAccountFiles.read() },
                encode: UserDatabaseRecords.encode,
                logger: self.logger
            ) : nil
        let store: any SessionStore =
            if let unixUsers {
                UnixUserAllocatingStore(database: parts.database, directory: unixUsers, now: { Timestamp.now() })
            } else {
                parts.database
            }
        let registry = SessionRegistry(
            store: store,
            providers: parts.providers(for: self.configuration),
            defaultProvider: self.configuration.defaultProvider,
            configuration: self.configuration.registryConfiguration,
            seats: self.configuration.seats,
            leaseConfiguration: self.configuration.leases,
            clock: parts.clock,
            logger: self.logger
        )
        Systemd.extendTimeout(seconds: 90)
        try await registry.load()
        // Seat locks and PINs: kept in the database, PINs hashed as the local provider hashes passwords.
        try await registry.useSeatLocks(SeatLockParts(store: parts.database, hasher: parts.hasher))
        // Loading many users allocates and frees far more than the state it leaves behind; give the freed heap back
        // to the system rather than keep it as resident memory for the daemon's whole life. Likewise the pages of
        // code that only start-up ran (configuration, migrations, loading): the kernel maps a binary's code in large
        // blocks, so they are most of the daemon's resident memory on a small device until the kernel is pressed
        // for memory. What serving needs is faulted back in from the page cache as it runs.
        _ = usher_malloc_trim()
        let pagedOut = usher_page_out_own_code()
        self.logger.debug("start-up memory given back", metadata: ["code.bytes": "\(pagedOut)"])

        let tracker = ConnectionTracker()
        let followsLogind = self.configuration.seats.source == .logind
        if followsLogind {
            for seat in Logind.seats() { await registry.seatAppeared(seat) }
            if !Logind.canSeeOtherUsersProcesses {
                // sd-login reads a peer's session from /proc/PID/cgroup, which ProtectProc=invisible hides.
                self.logger.warning(
                    "seats from logind: usherd cannot see other users' processes (ProtectProc=invisible?); their requests are about the default seat"
                )
            }
        }
        let seatOfPeer: @Sendable (PeerCredentials) -> String?
        if followsLogind {
            seatOfPeer = { peer in
                let seat: String? = Logind.seat(ofPID: peer.pid)
                return seat
            }
        } else {
            seatOfPeer = { _ in nil }
        }
        let settings = ServerSettings(
            limits: self.configuration.limits,
            policy: AccessPolicy(daemonUID: getuid(), rules: self.configuration.accessRules),
            seatOfPeer: seatOfPeer
        )
        if let warning = settings.policy.programVisibilityWarning { self.logger.warning("\(warning)") }
        let auditLog = AuditLog()
        let logBudget = PeerLogBudget(
            limit: { settings.limits.maximumLogRecordsPerSecond },
            logger: self.logger
        )
        let throttle = LoginThrottle(
            settings: self.configuration.loginThrottle,
            store: parts.database,
            logger: self.logger
        )
        do {
            try await throttle.restore()
        } catch {
            // The daemon still serves; counts start from zero, as they did before they were stored.
            self.logger.error(
                "could not read the login throttle's stored counts; starting from zero",
                metadata: ["error": "\(error)"]
            )
        }
        let dispatcher = Dispatcher(
            registry: registry,
            version: usherdVersion,
            settings: settings,
            auditLog: auditLog,
            throttle: throttle,
            logBudget: logBudget,
            connectionCount: { tracker.count }
        )
        // The Varlink socket first: once the main socket accepts connections (what clients and tests wait for), both
        // do.
        let varlinkServer = try await self.bindVarlinkSocket(dispatcher: dispatcher, tracker: tracker)
        let userDatabase = try await self.bindUserDatabaseSocket(
            directory: unixUsers,
            dispatcher: dispatcher,
            tracker: tracker
        )
        let address: ListenAddress
        if let descriptor = Systemd.listeningDescriptor(named: "usher") {
            address = .inherited(descriptor: descriptor, path: Systemd.boundPath(of: descriptor))
        } else {
            address = .path(self.socketPath, mode: self.configuration.socketMode)
        }
        let server = try await SocketServer.bind(address, dispatcher: dispatcher, tracker: tracker, logger: self.logger)
        let activation = if case .inherited = address { " (socket activation)" } else { "" }
        self.logger.info(
            "usherd \(usherdVersion) listening\(activation)",
            metadata: ["socket": "\(address.displayPath)", "state_directory": "\(self.stateDirectory)"]
        )
        let status = SystemdStatusService(registry: registry, logger: self.logger)
        Systemd.ready(status: await status.currentStatus())

        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            // Before the server: services stop in reverse order, so the audit log writes its last summaries after the
            // server has answered its last request.
            .init(service: auditLog),
            .init(service: logBudget),
            .init(service: server),
        ]
        // Beside the main server: services stop in reverse order, and the status service ends at the start of a
        // shutdown, so it must come after both.
        if let varlinkServer { services.append(.init(service: varlinkServer)) }
        if let userDatabase { services.append(.init(service: userDatabase.0)) }
        services += [
            .init(service: RefreshService(registry: registry)),
            .init(service: BackgroundWorkService(work: parts.oidc.background)),
            .init(service: status),
            .init(
                service: ReloadService(
                    reloader: Reloader(
                        configurationPath: self.configurationPath,
                        running: self.configuration,
                        parts: parts,
                        registry: registry,
                        settings: settings,
                        throttle: throttle,
                        logLevel: self.logLevel,
                        status: status,
                        // Only when it serves records: a socket systemd handed over with `[unix_users]` off never does.
                        userDatabase: unixUsers != nil ? userDatabase?.1 : nil,
                        logger: self.logger
                    )
                )
            ),
        ]
        if followsLogind {
            services.append(
                .init(
                    service: LogindSeatMonitor(registry: registry, logger: self.logger),
                    successTerminationBehavior: .ignore
                )
            )
        }
        if self.configuration.seats.follow == .logind {
            services.append(.init(service: LogindFollower(registry: registry, logger: self.logger)))
        }
        if let interval = Systemd.watchdogInterval() {
            self.logger.info("watchdog enabled", metadata: ["interval": "\(interval)"])
            services.append(.init(service: WatchdogService(interval: interval, registry: registry)))
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: self.logger
            )
        )
        try await group.run()
        self.logger.info("usherd stopped")
    }
}

extension DaemonConfiguration {
    var registryConfiguration: RegistryConfiguration {
        RegistryConfiguration(refreshMarginMilliseconds: self.refreshMarginMilliseconds)
    }
}
