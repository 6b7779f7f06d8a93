import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// A real OpenID Connect provider for the tests: django-oauth-toolkit from `Tests/Fixtures/oidc-server`, with its
/// database and signing key in a temporary directory, served on 127.0.0.1. `make deps` installs it.
///
/// Users: alice to judy, mallory (deleted by one test), olivia (revoked by one test) and peggy (whose email one test
/// changes), each with the password
/// `<name>-password`. Clients: `usher-code` (public, authorization code + PKCE), `usher-device` (public, device
/// flow), `usher-password` (secret `password-secret`), `usher-short` (secret `short-secret`, 4-second access tokens),
/// `usher-service` (secret `service-secret`, client credentials). See the fixture's `server.py`.
final class OIDCTestServer: @unchecked Sendable {
    // @unchecked: `process` and `port` change only in `start`/`stop`, called by the one test that owns the server, one
    // at a time; other tasks only read `issuer`, which does not change while the server runs.
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/oidc-server").path

    let directory: TestDirectory
    private(set) var port = 0
    private var process: SpawnedProcess?

    /// The suite's shared server (see `OIDCServerScope`).
    @TaskLocal static var shared: OIDCTestServer?

    var issuer: String { "http://127.0.0.1:\(self.port)/o" }
    var logPath: String { self.directory.file("server.log") }

    /// Sets up a fresh server (database, key, users, clients); it is not started yet.
    init() async throws {
        self.directory = try TestDirectory()
        let setup = try await Self.python(["server.py", "setup", self.directory.file("state")], timeout: .seconds(120))
        guard setup.status == 0 else {
            self.directory.remove()
            throw TestSupportError(
                "the OpenID Connect test server could not be set up (run `make deps`):\n\(setup.stderr)"
            )
        }
        for (name, secret) in ["password": "password-secret", "short": "short-secret", "service": "service-secret"] {
            try self.directory.write("\(name).secret", secret + "\n")
        }
    }

    /// Sets up and starts a server, runs `body`, and always stops the server and removes its files.
    static func with<T>(_ body: (OIDCTestServer) async throws -> T) async throws -> T {
        let server = try await OIDCTestServer()
        do {
            try await server.start()
            let result = try await body(server)
            await server.shutdown()
            return result
        } catch {
            await server.shutdown()
            throw error
        }
    }

    static func python(_ arguments: [String], timeout: Duration = .seconds(60)) async throws -> ProcessOutput {
        try await runProcess(
            TestPython.executable,
            arguments.enumerated().map { $0.offset == 0 ? "\(Self.fixtures)/\($0.element)" : $0.element },
            timeout: timeout
        )
    }

    /// Starts serving, on `port` (a free one when 0; the same one again after `stop` when nil), and waits until it
    /// accepts connections.
    func start(port: Int? = nil) async throws {
        let announcement = self.directory.file("listening")
        _ = FileManager.default.createFile(atPath: announcement, contents: nil)
        if !FileManager.default.fileExists(atPath: self.logPath) {
            _ = FileManager.default.createFile(atPath: self.logPath, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: self.logPath))
        try log.seekToEnd()
        let listening = try FileHandle(forWritingTo: URL(fileURLWithPath: announcement))
        let process = try SpawnedProcess(
            TestPython.executable,
            ["\(Self.fixtures)/server.py", "serve", self.directory.file("state"), "\(port ?? self.port)"],
            stdout: .descriptor(listening.fileDescriptor),
            stderr: .descriptor(log.fileDescriptor)
        )
        try listening.close()
        try log.close()
        self.process = process
        let deadline = ContinuousClock.now + hangGuard
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: announcement, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }),
                let port = Int(line.split(separator: ":").last ?? "")
            {
                self.port = port
                return
            }
            if !process.isRunning {
                throw TestSupportError("the OpenID Connect test server exited at start:\n\(self.log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSupportError("the OpenID Connect test server did not start within \(hangGuard):\n\(self.log)")
    }

    var log: String { (try? String(contentsOfFile: self.logPath, encoding: .utf8)) ?? "" }

    /// Stops serving (SIGTERM, then SIGKILL after 10 s); the port then refuses connections.
    func stop() async {
        guard let process = self.process else { return }
        self.process = nil
        process.terminate()
        // SIGKILL after 10 s, and then the port is free once the kill has taken effect.
        if (try? await process.exit(within: .seconds(10))) == nil { _ = try? await process.exit() }
    }

    func shutdown() async {
        await self.stop()
        self.directory.remove()
    }

    /// Revokes every token of `user` at the server, as an administrator would.
    func revokeTokens(of user: String) async throws {
        let output = try await Self.python(["server.py", "revoke", self.directory.file("state"), user])
        guard output.status == 0 else { throw TestSupportError("revoke failed: \(output.stderr)") }
    }

    /// The server's count of `user`'s tokens: access tokens, active and revoked refresh tokens.
    func tokens(of user: String) async throws -> (access: Int64, refreshActive: Int64, refreshRevoked: Int64) {
        let output = try await Self.python(["server.py", "tokens", self.directory.file("state"), user])
        guard output.status == 0,
            case .object(let counts) = try JSONDecoder().decode(JSONValue.self, from: Data(output.stdout.utf8))
        else { throw TestSupportError("tokens failed: \(output.stderr)") }
        return (
            counts["access"]?.intValue ?? -1, counts["refresh_active"]?.intValue ?? -1,
            counts["refresh_revoked"]?.intValue ?? -1
        )
    }

    /// Changes `user`'s names and groups at the server, as an administrator would (the claims change with them).
    func setProfile(of user: String, firstName: String, lastName: String, groups: [String] = []) async throws {
        let output = try await Self.python(
            ["server.py", "set-profile", self.directory.file("state"), user, firstName, lastName] + groups
        )
        guard output.status == 0 else { throw TestSupportError("set-profile failed: \(output.stderr)") }
    }

    /// Changes `user`'s email at the server (its `email` claim changes, still verified).
    func setEmail(of user: String, to email: String) async throws {
        let output = try await Self.python(["server.py", "set-email", self.directory.file("state"), user, email])
        guard output.status == 0 else { throw TestSupportError("set-email failed: \(output.stderr)") }
    }

    /// Makes every access token of `user` expired at the server.
    func expireAccessTokens(of user: String) async throws {
        let output = try await Self.python(["server.py", "expire", self.directory.file("state"), user])
        guard output.status == 0 else { throw TestSupportError("expire failed: \(output.stderr)") }
    }

    /// The scripted person at a browser (`browser.py`).
    func browser(_ arguments: [String]) async throws -> ProcessOutput {
        try await Self.python(["browser.py"] + arguments)
    }

    /// The `[providers.*]` sections for this server: one provider per client. Secrets are files next to the
    /// configuration (`secretDirectory`), named `password.secret`, `short.secret`, `service.secret`.
    func providers(secretDirectory: String? = nil, defaultProvider: String = "corp", corp extra: String = "") -> String
    {
        let secrets = secretDirectory ?? self.directory.path
        return """
            [daemon]
            default_provider = "\(defaultProvider)"

            [providers.code]
            type = "oidc"
            issuer = "\(self.issuer)"
            client_id = "usher-code"

            [providers.device]
            type = "oidc"
            issuer = "\(self.issuer)"
            client_id = "usher-device"

            [providers.corp]
            type = "oidc"
            issuer = "\(self.issuer)"
            client_id = "usher-password"
            client_secret_file = "\(secrets)/password.secret"
            \(extra)

            [providers.short]
            type = "oidc"
            issuer = "\(self.issuer)"
            client_id = "usher-short"
            client_secret_file = "\(secrets)/short.secret"
            # A hang guard, not a speed: the suites share this server on a busy machine, and a refresh it answers
            # after the limit has rotated the refresh token all the same (the retry with the old one is refused).
            request_timeout = "20s"

            [providers.service]
            type = "oidc"
            issuer = "\(self.issuer)"
            client_id = "usher-service"
            client_secret_file = "\(secrets)/service.secret"
            token_endpoint_auth = "client_secret_post"
            scopes = ["read"]
            """
    }
}

/// Runs a suite with one OpenID Connect test server, started before its first test and stopped after its last
/// (`OIDCTestServer.shared`).
struct OIDCServerScope: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await OIDCTestServer.with { server in
            try await OIDCTestServer.$shared.withValue(server) { try await function() }
        }
    }
}

extension Trait where Self == OIDCServerScope {
    /// One shared OpenID Connect test server for the suite.
    static var oidcServer: Self { Self() }
}

/// A program running in the background (the CLI waiting for a browser), with its output in files.
final class BackgroundProcess: @unchecked Sendable {
    // @unchecked: the process is started in `init` and only waited on by the test that owns it.
    private let process: SpawnedProcess
    private let directory: TestDirectory

    /// - Parameter environment: variables set on top of the test's environment, which has no display.
    init(_ executable: String, _ arguments: [String], stdin: String = "", environment: [String: String] = [:]) throws {
        self.directory = try TestDirectory()
        _ = FileManager.default.createFile(atPath: self.directory.file("out"), contents: nil)
        _ = FileManager.default.createFile(atPath: self.directory.file("err"), contents: nil)
        try self.directory.write("in", stdin)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: self.directory.file("out")))
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: self.directory.file("err")))
        let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: self.directory.file("in")))
        var inherited = ProcessInfo.processInfo.environment
        inherited["DISPLAY"] = nil
        inherited["WAYLAND_DISPLAY"] = nil
        self.process = try SpawnedProcess(
            executable,
            arguments,
            environment: inherited.merging(environment) { _, set in set },
            stdin: .descriptor(input.fileDescriptor),
            stdout: .descriptor(output.fileDescriptor),
            stderr: .descriptor(errors.fileDescriptor)
        )
        for handle in [input, output, errors] { try handle.close() }
    }

    var stdout: String { (try? String(contentsOfFile: self.directory.file("out"), encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: self.directory.file("err"), encoding: .utf8)) ?? "" }

    /// Waits until a line of stderr satisfies `predicate`, and returns it.
    func stderrLine(within timeout: Duration = hangGuard, where predicate: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = self.stderr.split(separator: "\n").map(String.init).first(where: predicate) { return line }
            if !self.process.isRunning,
                let line = self.stderr.split(separator: "\n").map(String.init).first(where: predicate)
            {
                return line
            }
            if !self.process.isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSupportError("no such line on stderr; stderr so far:\n\(self.stderr)")
    }

    /// Waits for the program to exit and returns its status; kills it after `timeout`.
    func exitStatus(within timeout: Duration = hangGuard) async throws -> Int32 {
        do {
            return try await self.process.exit(within: timeout)
        } catch {
            throw TestSupportError("still running after \(timeout); stderr:\n\(self.stderr)")
        }
    }

    deinit {
        if self.process.isRunning { self.process.terminate() }
        self.directory.remove()
    }
}

/// A real OpenID provider with token exchange (RFC 8693): idpyoidc from `Tests/Fixtures/oidc-server/exchange.py`, on
/// 127.0.0.1. django-oauth-toolkit has no token exchange. Clients: `app` (another application, whose tokens are
/// exchanged) and `usher` (secret `usher-secret`). The user: diana.
final class TokenExchangeServer: @unchecked Sendable {
    // @unchecked: `process` and `issuer` are set once in `start`, before the server is handed to anyone.
    let directory: TestDirectory
    private(set) var issuer = ""
    private var process: SpawnedProcess?

    private init() throws {
        self.directory = try TestDirectory()
        try self.directory.write("usher.secret", "usher-secret\n")
    }

    /// Starts a server (with `dpop`, the DPoP one: see exchange.py), runs `body`, and always stops the server and
    /// removes its files.
    static func with<T>(dpop: Bool = false, _ body: (TokenExchangeServer) async throws -> T) async throws -> T {
        let server = try TokenExchangeServer()
        do {
            try await server.start(dpop: dpop)
            let result = try await body(server)
            await server.shutdown()
            return result
        } catch {
            await server.shutdown()
            throw error
        }
    }

    private func start(dpop: Bool) async throws {
        let announcement = self.directory.file("listening")
        _ = FileManager.default.createFile(atPath: announcement, contents: nil)
        _ = FileManager.default.createFile(atPath: self.directory.file("server.log"), contents: nil)
        let listening = try FileHandle(forWritingTo: URL(fileURLWithPath: announcement))
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: self.directory.file("server.log")))
        let process = try SpawnedProcess(
            TestPython.executable,
            ["\(OIDCTestServer.fixtures)/exchange.py", "serve", self.directory.file("state")]
                + (dpop ? ["--dpop"] : []),
            stdout: .descriptor(listening.fileDescriptor),
            stderr: .descriptor(log.fileDescriptor)
        )
        try listening.close()
        try log.close()
        self.process = process
        let deadline = ContinuousClock.now + hangGuard
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: announcement, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) {
                self.issuer = String(line.dropFirst("listening on ".count))
                return
            }
            if !process.isRunning {
                throw TestSupportError("the token exchange server exited at start (run `make deps`):\n\(self.log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSupportError("the token exchange server did not start within \(hangGuard):\n\(self.log)")
    }

    var log: String { (try? String(contentsOfFile: self.directory.file("server.log"), encoding: .utf8)) ?? "" }

    private func shutdown() async {
        if let process = self.process {
            process.terminate()
            _ = try? await process.exit(within: .seconds(10))
        }
        self.directory.remove()
    }

    /// An access token another application (`app`) got for diana: the subject token to exchange.
    func subjectToken() async throws -> String {
        let output = try await OIDCTestServer.python(["exchange.py", "subject-token", self.issuer])
        guard output.status == 0 else { throw TestSupportError("no subject token: \(output.stderr)") }
        return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
