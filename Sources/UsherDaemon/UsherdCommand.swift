import ArgumentParser
import Foundation
import Logging

/// `usherd`: the multi-user session daemon.
package struct UsherdCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "usherd",
        abstract: "The multi-user session daemon: who is using this device, and a valid access token for them.",
        version: usherdVersion
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
        var configuration = DaemonConfiguration()
        do {
            if let path = self.config { configuration = try DaemonConfiguration.load(path: path) }
        } catch {
            FileHandle.standardError.write(Data("usherd: \(error)\n".utf8))
            throw ExitCode(78)
        }
        if let socket { configuration.socket = socket }
        if let stateDirectory { configuration.stateDirectory = stateDirectory }
        if let logLevel {
            guard let level = Logger.Level(rawValue: logLevel) else {
                throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
            }
            configuration.logLevel = level
        }
        let environment = ProcessInfo.processInfo.environment
        let uid = getuid()
        let level = configuration.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "usherd")
        let daemon = Daemon(
            configuration: configuration,
            socketPath: configuration.resolvedSocketPath(environment: environment, uid: uid),
            stateDirectory: configuration.resolvedStateDirectory(environment: environment, uid: uid),
            logger: logger
        )
        do {
            try await daemon.run()
        } catch {
            logger.critical("usherd could not start: \(error)")
            throw ExitCode.failure
        }
    }
}
