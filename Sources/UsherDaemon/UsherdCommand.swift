import ArgumentParser
import Logging
import NIOCore
import UsherProviders
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

/// `usherd`: the multi-user session daemon.
package struct UsherdCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "usherd",
        abstract: "The multi-user session daemon: who is using this device, and a valid access token for them.",
        // Spelled out: the generated one would show the hidden function-supervisor subcommand as `<subcommand>`.
        usage:
            "usherd [--config <config>] [--socket <socket>] [--state-directory <state-directory>] [--log-level <level>]",
        discussion: """
            Without --config, usherd reads $CONFIGURATION_DIRECTORY/usherd.toml when systemd sets \
            CONFIGURATION_DIRECTORY and the file exists, and otherwise runs on the defaults. SIGHUP re-reads the \
            configuration; SIGTERM and SIGINT stop the daemon gracefully.
            """,
        version: usherdVersion,
        subcommands: [FunctionSupervisorCommand.self]
    )

    @Option(name: .long, help: "The TOML configuration file (every key optional).")
    var config: String?

    @Option(name: .long, help: "The Unix socket to listen on (overrides [daemon] socket).")
    var socket: String?

    @Option(
        name: .customLong("state-directory"),
        help: "Where the database and keys live (overrides [daemon] state_directory)."
    )
    var stateDirectory: String?

    @Option(
        name: .customLong("log-level"),
        help: "trace, debug, info, notice, warning, error or critical (overrides [daemon] log_level)."
    )
    var logLevel: String?

    package init() {}

    package mutating func run() async throws {
        // Swift's runtime catches SIGABRT to print a backtrace and then lingers; systemd's watchdog kills a wedged
        // daemon with SIGABRT and expects it gone at once.
        signal(SIGABRT, SIG_DFL)
        // One event loop thread by default: it answers reads from memory at well over 100,000 requests a second, and
        // on a small device a second loop only competes with the clients for the cores (see docs/performance.md).
        // USHERD_EVENT_LOOPS sets another number, for measuring.
        let loops = ProcessInfo.processInfo.environment["USHERD_EVENT_LOOPS"].flatMap(Int.init) ?? 1
        NIOSingletons.groupLoopCountSuggestion = min(max(loops, 1), 64)
        // limits.max_connections needs a descriptor per connection, two for an identified peer (its socket and the
        // fdinfo file that ConnectionWatch keeps open): take the hard limit as the soft one.
        var files = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files) == 0, files.rlim_cur < files.rlim_max {
            files.rlim_cur = files.rlim_max
            _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &files)
        }
        let environment = ProcessInfo.processInfo.environment
        var configuration = DaemonConfiguration()
        let path = self.config ?? Self.defaultConfigurationPath(environment: environment)
        do {
            if let path { configuration = try DaemonConfiguration.load(path: path) }
        } catch {
            StartupMessage.report("usherd: \(error)", level: .error, environment: environment)
            Systemd.failed(status: "configuration error: \(error)", errno: EINVAL)
            throw ExitCode(ExitStatus.configuration)
        }
        if let socket { configuration.socket = socket }
        if let stateDirectory { configuration.stateDirectory = stateDirectory }
        if let logLevel {
            guard let level = Logger.Level(rawValue: logLevel) else {
                throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
            }
            configuration.logLevel = level
        }
        let uid = getuid()
        let levelSetting = LogLevelSetting(configuration.logLevel)
        let format: DaemonLogHandler.Format =
            DaemonLogHandler.stderrIsJournal(environment: environment) ? .journal : .terminal
        LoggingSystem.bootstrap { label in
            DaemonLogHandler(label: label, format: format, levelSetting: levelSetting)
        }
        let logger = Logger(label: "usherd")
        let daemon = Daemon(
            configuration: configuration,
            configurationPath: path,
            socketPath: configuration.resolvedSocketPath(environment: environment, uid: uid),
            stateDirectory: configuration.resolvedStateDirectory(environment: environment, uid: uid),
            tokenKeyPath: configuration.resolvedTokenEncryptionKey(environment: environment),
            logLevel: levelSetting,
            logger: logger
        )
        do {
            try await daemon.run()
        } catch {
            logger.critical("usherd could not start: \(error)")
            Systemd.failed(status: "could not start: \(error)", errno: Self.errno(for: error))
            throw ExitCode(ExitStatus.of(error))
        }
    }

    static func defaultConfigurationPath(environment: [String: String]) -> String? {
        guard let directory = environment["CONFIGURATION_DIRECTORY"]?.split(separator: ":").first else { return nil }
        let path = "\(directory)/usherd.toml"
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    static func errno(for error: any Error) -> Int32? {
        switch error {
        case ServerError.socketInUse: EADDRINUSE
        case ServerError.notASocket: EEXIST
        case ServerError.cannotPrepare: EACCES
        case is StateDirectoryBusyError: EBUSY
        case let error as LockFileError: error.code
        case is UnsafeFileError, is TokenSigner.KeyFileError: EACCES
        default: nil
        }
    }
}

/// `usherd function-supervisor --parent PID -- COMMAND ARGS...`: the supervisor of one run of an authentication
/// function (`RunSupervisor`). usherd starts it for every run; it is not meant to be run by hand.
struct FunctionSupervisorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: RunSupervisor.subcommand,
        abstract: "Runs one authentication function under supervision (started by usherd itself).",
        shouldDisplay: false
    )

    @Option(help: "The process ID of the usherd that started this run; the run is killed when it goes away.")
    var parent: Int32

    @Argument(parsing: .postTerminator, help: "The command and its arguments.")
    var command: [String] = []

    func run() throws {
        RunSupervisor.main(parent: self.parent, command: self.command)
    }
}

/// usherd's exit statuses, from `sysexits.h` where one fits; docs/configuration.md and usherd(8) list them. `usherd.service` has
/// `RestartPreventExitStatus=` for the ones that a restart cannot cure.
package enum ExitStatus {
    /// Any other start-up failure (the socket is in use, the database cannot be opened, a wrong token key...).
    package static let failure: Int32 = 1
    /// Another usherd holds the state directory (`EX_TEMPFAIL`: it clears when that one stops).
    package static let stateDirectoryBusy: Int32 = 75
    /// A state file or directory or a key file is unsafe: someone else owns it or may change it, or others may read a
    /// key (`EX_NOPERM`). The message names the file and the fix.
    package static let unsafeFile: Int32 = 77
    /// The configuration file does not parse, or names something that does not exist (`EX_CONFIG`).
    package static let configuration: Int32 = 78

    static func of(_ error: any Error) -> Int32 {
        switch error {
        case is StateDirectoryBusyError: Self.stateDirectoryBusy
        case is UnsafeFileError: Self.unsafeFile
        case let error as TokenSigner.KeyFileError:
            switch error {
            case .notRegularFile, .insecurePermissions, .wrongOwner: Self.unsafeFile
            case .invalidKey, .systemCallFailed: Self.failure
            }
        default: Self.failure
        }
    }
}
