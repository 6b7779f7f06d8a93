import Foundation
import UsherProtocol

/// The real `usherd` binary, started on a temporary socket and state directory, as a client would meet it.
package final class DaemonProcess: @unchecked Sendable {
    // @unchecked: `process` and `logHandle` are only touched by the test that owns this object, one call at a
    // time; the class is Sendable so that tests may hand it to child tasks that only read `socketPath`.
    package let directory: TestDirectory
    package let socketPath: String
    /// The Varlink socket, `io.usher.Session` next to the main one (unless the configuration moves it).
    package var varlinkPath: String { self.directory.file("io.usher.Session") }
    package let stateDirectory: String
    package let configPath: String
    package let logPath: String
    private var process: SpawnedProcess?
    private var logHandle: FileHandle?
    /// Whether this daemon holds one of the run's `DaemonSlots`.
    private var holdsSlot = false

    /// - Parameters:
    ///   - config: TOML appended to the generated configuration (socket and state directory come from flags).
    package init(config: String = "", directory: TestDirectory? = nil) throws {
        self.directory = try directory ?? TestDirectory()
        self.socketPath = self.directory.file("usher.sock")
        self.stateDirectory = self.directory.file("state")
        self.configPath = self.directory.file("usherd.toml")
        self.logPath = self.directory.file("usherd.log")
        try self.directory.write("usherd.toml", config)
    }

    /// Starts the daemon and waits until its socket accepts connections.
    package static func start(config: String = "", extraArguments: [String] = []) async throws -> DaemonProcess {
        let daemon = try DaemonProcess(config: config)
        try await daemon.start(extraArguments: extraArguments)
        return daemon
    }

    /// Starts a daemon, runs `body` with it, and always stops it and removes its directory afterwards, whether
    /// `body` returns or throws.
    package static func with<T>(
        config: String = "",
        extraArguments: [String] = [],
        _ body: (DaemonProcess) async throws -> T
    ) async throws -> T {
        let daemon = try DaemonProcess(config: config)
        do {
            try await daemon.start(extraArguments: extraArguments)
            let result = try await body(daemon)
            await daemon.shutdown()
            return result
        } catch {
            await daemon.shutdown()
            throw error
        }
    }

    /// Runs `body` with a daemon the body starts itself (with its own environment or wrapper), and always stops the
    /// daemon and removes its directory afterwards.
    package static func using<T>(_ daemon: DaemonProcess, _ body: (DaemonProcess) async throws -> T) async throws -> T {
        do {
            let result = try await body(daemon)
            await daemon.shutdown()
            return result
        } catch {
            await daemon.shutdown()
            throw error
        }
    }

    package var isRunning: Bool { self.process?.isRunning ?? false }
    package var pid: Int32 { self.process?.processIdentifier ?? 0 }

    /// Starts the daemon.
    ///
    /// - Parameters:
    ///   - wrapper: a command that runs usherd (its path and arguments are appended), such as
    ///     `systemd-socket-activate -l PATH`.
    ///   - environment: the daemon's whole environment (default: the test's).
    ///   - waitForSocket: whether to wait until the socket accepts a connection.
    package func start(
        extraArguments: [String] = [],
        environment: [String: String]? = nil,
        wrapper: [String] = [],
        waitForSocket: Bool = true
    ) async throws {
        let usherd = try BuiltProducts.path(of: "usherd")
        let arguments =
            [
                "--config", self.configPath, "--socket", self.socketPath, "--state-directory", self.stateDirectory,
                "--log-level", "debug",
            ] + extraArguments
        let command = wrapper.isEmpty ? [usherd] + arguments : wrapper + [usherd] + arguments
        try self.useCheapPasswordHashes()
        if !self.holdsSlot { self.holdsSlot = await DaemonSlots.shared.acquire() }
        if !FileManager.default.fileExists(atPath: self.logPath) {
            _ = FileManager.default.createFile(atPath: self.logPath, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: self.logPath))
        try log.seekToEnd()
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess(
                command[0],
                Array(command.dropFirst()),
                environment: environment,
                stdout: .descriptor(log.fileDescriptor),
                stderr: .descriptor(log.fileDescriptor)
            )
        } catch {
            await self.releaseSlot()
            throw error
        }
        self.process = process
        self.logHandle = log
        guard waitForSocket else { return }
        let deadline = ContinuousClock.now + hangGuard
        while ContinuousClock.now < deadline {
            if !process.isRunning {
                await self.releaseSlot()
                throw TestSupportError("usherd exited with \(process.terminationStatus) at start:\n\(self.log)")
            }
            if let connection = try? LineConnection(path: self.socketPath) {
                connection.close()
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSupportError("usherd did not accept connections within \(hangGuard):\n\(self.log)")
    }

    /// Makes the configuration file ask for cheap password hashes (scrypt N = 2^10 instead of 2^15), unless the test
    /// chose a cost itself: the real cost is for devices, and only the hashing tests need it. Done at every start,
    /// because tests rewrite the file between starts.
    private func useCheapPasswordHashes() throws {
        let config = (try? String(contentsOfFile: self.configPath, encoding: .utf8)) ?? ""
        guard !config.contains("password_hash_cost") else { return }
        let setting = "password_hash_cost = 10\n"
        var lines = config.split(separator: "\n", omittingEmptySubsequences: false)
        if let daemonSection = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "[daemon]" }) {
            lines.insert(Substring(setting.dropLast()), at: daemonSection + 1)
            try self.directory.write("usherd.toml", lines.joined(separator: "\n"))
        } else {
            try self.directory.write("usherd.toml", "[daemon]\n" + setting + config)
        }
    }

    /// Everything the daemon has logged so far.
    package var log: String { (try? String(contentsOfFile: self.logPath, encoding: .utf8)) ?? "" }

    /// Sends a signal and waits for the process to exit; returns its exit status.
    @discardableResult
    package func stop(signal: Int32 = SIGTERM, timeout: Duration = hangGuard) async throws -> Int32 {
        try await self.stop(signal: signal, timeout: timeout, keepingSlot: false)
    }

    private func stop(signal: Int32, timeout: Duration, keepingSlot: Bool) async throws -> Int32 {
        guard let process else {
            if !keepingSlot { await self.releaseSlot() }
            return 0
        }
        process.signal(signal)
        let status: Int32
        do {
            status = try await process.exit(within: timeout)
        } catch {
            if !keepingSlot { await self.releaseSlot() }
            throw TestSupportError("usherd did not exit within \(timeout) after signal \(signal)")
        }
        self.process = nil
        try? self.logHandle?.close()
        self.logHandle = nil
        if !keepingSlot { await self.releaseSlot() }
        return status
    }

    private func releaseSlot() async {
        guard self.holdsSlot else { return }
        self.holdsSlot = false
        await DaemonSlots.shared.release()
    }

    /// Kills the daemon with SIGKILL (a crash) and waits for it to be gone.
    package func kill9() async throws {
        _ = try await self.stop(signal: SIGKILL, timeout: hangGuard, keepingSlot: true)
    }

    /// Stops the daemon and starts it again, keeping its slot (a restart is not a new daemon).
    package func restart() async throws {
        _ = try await self.stop(signal: SIGTERM, timeout: hangGuard, keepingSlot: true)
        try await self.start()
    }

    /// A new raw connection to the daemon.
    package func connect() throws -> LineConnection {
        try LineConnection(path: self.socketPath)
    }

    /// Stops the daemon (if running) and removes its directory.
    package func shutdown() async {
        _ = try? await self.stop()
        self.directory.remove()
    }
}
