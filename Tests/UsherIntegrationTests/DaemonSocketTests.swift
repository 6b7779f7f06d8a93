import Crypto
import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// The daemon's socket file: its mode when the daemon is ready, and a path that is never stolen from a live daemon.
@Suite(.integrationHangGuard)
struct DaemonSocketTests {
    @Test func theSocketHasItsModeWhenTheDaemonIsReadyAndALinkAtItsPathIsRefused() async throws {
        let daemon = try DaemonProcess(config: "[daemon]\nsocket_mode = \"0660\"\n")
        try await DaemonProcess.using(daemon) { daemon in
            let notify = try NotifyListener(path: daemon.directory.file("notify"))
            var environment = ProcessInfo.processInfo.environment
            for key in ["WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID"] { environment[key] = nil }
            environment["NOTIFY_SOCKET"] = notify.address
            try await daemon.start(environment: environment, waitForSocket: false)
            _ = try await notify.waitFor("READY=1", timeout: .seconds(60))
            var info = stat()
            #expect(lstat(daemon.socketPath, &info) == 0)
            #expect(info.st_mode & S_IFMT == S_IFSOCK)
            #expect(info.st_mode & 0o7777 == 0o660)
            // Nothing of the daemon's is left next to the socket.
            let entries = try FileManager.default.contentsOfDirectory(atPath: daemon.directory.path)
            #expect(!entries.contains { $0.hasPrefix(".usherd-") }, "\(entries)")
            try await daemon.stop()

            // A symbolic link at the socket path (to a file of root's) is neither followed nor replaced: the
            // daemon refuses to start and says why.
            let target = daemon.directory.file("target")
            try "secret".write(toFile: target, atomically: false, encoding: .utf8)
            chmod(target, 0o600)
            unlink(daemon.socketPath)
            #expect(symlink(target, daemon.socketPath) == 0)
            let refused = try await runProcess(
                try BuiltProducts.path(of: "usherd"),
                [
                    "--config", daemon.configPath, "--socket", daemon.socketPath, "--state-directory",
                    daemon.stateDirectory,
                ]
            )
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("is a symbolic link"), "\(refused.stderr)")
            #expect(lstat(target, &info) == 0 && info.st_mode & 0o7777 == 0o600)
            #expect(lstat(daemon.socketPath, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
        }
    }

    @Test func aLiveSocketIsNeverStolenAndAStaleOneIsReplaced() async throws {
        try await DaemonProcess.with { daemon in
            // A second daemon on the same socket refuses to start and leaves the first one serving.
            let usherd = try BuiltProducts.path(of: "usherd")
            let second = try await runProcess(
                usherd,
                ["--socket", daemon.socketPath, "--state-directory", daemon.directory.file("other")]
            )
            #expect(second.status != 0)
            #expect(second.stderr.contains("already listening"))
            #expect(try await daemon.connect().result("hello")["server"] == "usherd")

            // After a crash the socket file stays behind; the next start replaces it.
            try await daemon.kill9()
            #expect(FileManager.default.fileExists(atPath: daemon.socketPath))
            try await daemon.start()
            #expect(try await daemon.connect().result("hello")["server"] == "usherd")
        }
    }
}
