import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals
import UsherCore
import UsherServer

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

/// Applies a re-read configuration to the running daemon (SIGHUP).
///
/// Providers, lifetimes for new sessions, the refresh margin, limits and the log level change live. The socket and
/// the state directory need a restart, which is logged. A configuration that does not parse is logged and the running
/// one kept: a reload never stops the daemon.
final class Reloader: Sendable {
    private let configurationPath: String?
    private let running: Mutex<DaemonConfiguration>
    private let parts: Daemon.ProviderParts
    private let registry: SessionRegistry
    private let settings: ServerSettings
    private let throttle: LoginThrottle
    private let logLevel: LogLevelSetting
    private let status: SystemdStatusService
    /// The user database socket's interface, when there is one (`[unix_users]`).
    private let userDatabase: UserDatabaseInterface?
    private let logger: Logger

    init(
        configurationPath: String?,
        running: DaemonConfiguration,
        parts: Daemon.ProviderParts,
        registry: SessionRegistry,
        settings: ServerSettings,
        throttle: LoginThrottle,
        logLevel: LogLevelSetting,
        status: SystemdStatusService,
        userDatabase: UserDatabaseInterface? = nil,
        logger: Logger
    ) {
        self.configurationPath = configurationPath
        self.running = Mutex(running)
        self.parts = parts
        self.registry = registry
        self.settings = settings
        self.throttle = throttle
        self.logLevel = logLevel
        self.status = status
        self.userDatabase = userDatabase
        self.logger = logger
    }

    func reload() async {
        Systemd.reloading()
        defer { Systemd.notify(["READY=1"]) }
        guard let path = self.configurationPath else {
            self.logger.notice("reload requested, but usherd runs without a configuration file: nothing to reload")
            Systemd.status(await self.status.currentStatus())
            return
        }
        let current = self.running.withLock { $0 }
        var next: DaemonConfiguration
        do {
            next = try DaemonConfiguration.load(path: path)
            try FileSafety(logger: self.logger).refuseRewritableFiles(of: next, path: path)
        } catch {
            self.logger.error("reload failed; keeping the running configuration", metadata: ["error": "\(error)"])
            Systemd.status("reload failed, running configuration kept: \(error)")
            return
        }
        FileSafety(logger: self.logger).warnAboutReadableSecrets(of: next)
        // Command-line overrides still win over the file.
        next.socket = current.socket
        next.stateDirectory = current.stateDirectory
        if next.socketMode != current.socketMode {
            self.logger.warning("daemon.socket_mode changed: it applies at the next restart")
        }
        if next.fileSocket != current.fileSocket {
            self.logger.warning("daemon.socket changed: it applies at the next restart")
        }
        if next.varlinkSocket != current.varlinkSocket {
            self.logger.warning("daemon.varlink_socket changed: it applies at the next restart")
        }
        if next.unixUsers != current.unixUsers {
            if next.unixUsers.enabled != current.unixUsers.enabled, let userDatabase = self.userDatabase {
                // Off at once (records disappear now, the socket goes at the next restart), or back on: the accounts
                // were kept up to date meanwhile.
                userDatabase.setAvailable(next.unixUsers.enabled)
                self.logger.warning(
                    "unix_users.enabled changed: io.systemd.UserDatabase \(next.unixUsers.enabled ? "answers again" : "answers ServiceNotAvailable")"
                )
            }
            var kept = next.unixUsers
            kept.enabled = current.unixUsers.enabled
            if kept != current.unixUsers
                || (self.userDatabase == nil && next.unixUsers.enabled != current.unixUsers.enabled)
            {
                self.logger.warning("unix_users changed: it applies at the next restart")
            }
        }
        if next.passwordHashCost != current.passwordHashCost {
            self.logger.warning("daemon.password_hash_cost changed: it applies at the next restart")
        }
        if next.fileStateDirectory != current.fileStateDirectory {
            self.logger.warning("daemon.state_directory changed: it applies at the next restart")
        }
        await self.registry.reconfigure(
            providers: self.parts.providers(for: next),
            defaultProvider: next.defaultProvider,
            configuration: next.registryConfiguration
        )
        self.settings.limits = next.limits
        let policy = AccessPolicy(daemonUID: getuid(), rules: next.accessRules)
        if let warning = policy.programVisibilityWarning { self.logger.warning("\(warning)") }
        await self.settings.install(policy)
        self.throttle.settings = next.loginThrottle
        self.logLevel.value = next.logLevel
        self.running.withLock { $0 = next }
        self.logger.notice(
            "configuration reloaded",
            metadata: ["providers": "\(next.providers.map(\.name).joined(separator: ","))", "file": "\(path)"]
        )
        Systemd.status(await self.status.currentStatus())
    }
}

/// Reloads the configuration on every SIGHUP.
struct ReloadService: Service {
    let reloader: Reloader

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        await cancelWhenGracefulShutdown {
            for await _ in signals {
                await self.reloader.reload()
            }
        }
    }
}
