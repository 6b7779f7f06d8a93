import Foundation
import UsherProtocol
import UsherTestSupport

/// The delivery hook of the confirmation and reset tests: a script that appends what it was given on stdin (one JSON
/// line: email, purpose, token) to `deliveries.jsonl`, where the test reads the token, as a person reads a mail.
enum AccountHooks {
    /// Writes the script (mode 755) into `directory` and returns its path.
    static func install(in directory: TestDirectory) throws -> String {
        let log = directory.file("deliveries.jsonl")
        try directory.writeExecutable("deliver.sh", "#!/bin/sh\n/usr/bin/cat >> '\(log)'\n")
        return directory.file("deliver.sh")
    }

    /// Every delivery so far, oldest first.
    static func deliveries(in directory: TestDirectory) throws -> [[String: JSONValue]] {
        guard let text = try? String(contentsOfFile: directory.file("deliveries.jsonl"), encoding: .utf8) else {
            return []
        }
        return try text.split(separator: "\n").map {
            guard case .object(let object) = try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) else {
                throw TestSupportError("a delivery is not a JSON object: \($0)")
            }
            return object
        }
    }

    /// The token of the latest delivery.
    static func lastToken(in directory: TestDirectory) throws -> String {
        guard let token = try Self.deliveries(in: directory).last?["token"]?.stringValue else {
            throw TestSupportError("the hook delivered nothing")
        }
        return token
    }

    /// A configuration with two local providers whose accounts are confirmed by the hook and whose passwords can be
    /// reset with it: `local` with the default token lifetimes, `brief` whose tokens expire after a millisecond
    /// (the daemon has no clock a test can move; the token lifetimes themselves are `LocalProviderRecoveryTests`').
    static func config(hook: String, extra: String = "") -> String {
        """
        \(extra)
        [providers.local]
        type = "local"

        [providers.local.registration]
        confirm = "hook"
        confirm_hook = ["\(hook)"]
        reset_hook = ["\(hook)"]

        [providers.brief]
        type = "local"

        [providers.brief.registration]
        confirm = "hook"
        confirm_hook = ["\(hook)"]
        reset_hook = ["\(hook)"]
        confirm_token_lifetime = "1ms"
        reset_token_lifetime = "1ms"
        """
    }

    /// Starts a daemon with `config(hook:)` in a fresh directory and runs `body` with it and the directory.
    static func withDaemon<T>(
        extra: String = "",
        _ body: (DaemonProcess, TestDirectory) async throws -> T
    ) async throws -> T {
        let directory = try TestDirectory()
        let hook = try Self.install(in: directory)
        let daemon = try DaemonProcess(config: Self.config(hook: hook, extra: extra), directory: directory)
        return try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            return try await body(daemon, directory)
        }
    }
}
