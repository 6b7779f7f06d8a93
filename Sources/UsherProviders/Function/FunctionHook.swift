import Logging
import UsherCore
import UsherProtocol

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

/// `[providers.NAME.function]`: an executable that decides who the user is.
package struct FunctionHookConfiguration: Sendable, Hashable {
    /// The program and its arguments; the program is an absolute path, run without a shell.
    package var command: [String]
    /// How long one run may take before it is killed (with everything it started) and the login refused.
    package var timeoutMilliseconds: Int64 = 5000
    /// How many runs at once; further logins wait in line.
    package var maximumConcurrent: Int = 4
    /// The `usherd` executable that supervises each run (`RunSupervisor`): `/proc/self/exe` in the daemon; tests,
    /// which run inside a test runner, name the built `usherd`.
    package var supervisor: String

    package init(
        command: [String],
        supervisor: String,
        timeoutMilliseconds: Int64 = 5000,
        maximumConcurrent: Int = 4
    ) {
        self.command = command
        self.supervisor = supervisor
        self.timeoutMilliseconds = timeoutMilliseconds
        self.maximumConcurrent = maximumConcurrent
    }
}

/// The custom authentication function: runs the configured command with the client's payload and reads its verdict.
///
/// The protocol: the payload object as JSON (one line) on standard input; one JSON object on standard output,
/// `{"subject": "...", "email": "...", "name": "..."}` (email and name optional) to accept, or `{"error": "..."}` to
/// refuse. The environment holds only `PATH=/usr/bin:/bin`, `LANG=C.UTF-8` and `USHER_PROVIDER=<provider name>`.
/// Standard error is logged at debug level (its first 4 KiB). A run that exits non-zero, crashes, runs past the
/// timeout, prints more than 64 KiB or prints anything but one JSON object is a refusal with a message saying which.
struct FunctionHook: Sendable {
    /// Who the command says the user is.
    struct Verdict: Sendable, Equatable {
        var subject: String
        var email: String?
        var name: String?
    }

    static let outputLimit = 64 * 1024
    static let errorLimit = 4 * 1024
    /// Logins waiting for a run beyond this many are turned away at once.
    static let maximumWaiting = 256

    let providerName: String
    let configuration: FunctionHookConfiguration
    private let limiter: ConcurrencyLimiter
    private let logger: Logger

    init(providerName: String, configuration: FunctionHookConfiguration, logger: Logger) {
        self.providerName = providerName
        self.configuration = configuration
        self.limiter = ConcurrencyLimiter(
            limit: configuration.maximumConcurrent,
            maximumWaiting: Self.maximumWaiting
        )
        self.logger = logger
    }

    /// The environment of every run.
    var environment: [String: String] {
        ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "USHER_PROVIDER": self.providerName]
    }

    private var timeout: Duration { .milliseconds(self.configuration.timeoutMilliseconds) }

    /// Runs the command with `payload` and returns its verdict.
    ///
    /// - Throws: `ProviderError.invalidCredentials` for every refusal (the command's own message, or what went
    ///   wrong with the run), `.unavailable` when too many logins wait already or the command cannot be started.
    func decide(payload: [String: JSONValue]) async throws(ProviderError) -> Verdict {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let encoded = try? encoder.encode(JSONValue.object(payload)) else {
            throw .invalidParams(parameter: "credentials", "params.credentials.payload cannot be encoded as JSON")
        }
        let input = Array(encoded) + [UInt8(ascii: "\n")]
        let arguments = self.configuration.command
        let supervisor = self.configuration.supervisor
        let environment = self.environment
        let timeout = self.timeout
        let outcome = await self.limiter.withPermit {
            await HookProcess.start(
                arguments: arguments,
                supervisor: supervisor,
                environment: environment,
                input: input,
                timeout: timeout,
                outputLimit: Self.outputLimit,
                errorLimit: Self.errorLimit
            )
        }
        guard let outcome else {
            if Task.isCancelled { throw .unavailable("the login was cancelled") }
            self.logger.warning(
                "authentication function busy: \(Self.maximumWaiting) logins wait for it already",
                metadata: ["provider": "\(self.providerName)", "function.max_concurrent": "\(self.limiter.limit)"]
            )
            throw .unavailable("the authentication function is busy; try again later")
        }
        if !outcome.errors.isEmpty {
            self.logger.debug(
                "authentication function wrote to stderr",
                metadata: [
                    "provider": "\(self.providerName)",
                    "function.stderr": "\(String(decoding: outcome.errors, as: UTF8.self))",
                ]
            )
        }
        do {
            return try self.verdict(from: outcome)
        } catch {
            self.logger.info(
                "authentication function refused the login",
                metadata: ["provider": "\(self.providerName)", "reason": "\(error)"]
            )
            throw error
        }
    }

    private func verdict(from outcome: HookProcess.Outcome) throws(ProviderError) -> Verdict {
        let seconds = Self.format(milliseconds: self.configuration.timeoutMilliseconds)
        switch outcome.ending {
        case .exited(0):
            break
        case .exited(let status):
            throw .invalidCredentials("the authentication function exited with status \(status)")
        case .signaled(let signal):
            throw .invalidCredentials("the authentication function crashed (signal \(signal))")
        case .timedOut:
            throw .invalidCredentials("the authentication function did not answer within \(seconds) and was stopped")
        case .outputTooLarge:
            throw .invalidCredentials(
                "the authentication function's output is too large (more than \(Self.outputLimit) bytes)"
            )
        case .cancelled:
            throw .unavailable("the login was cancelled")
        case .notStarted(let code):
            self.logger.error(
                "cannot start the authentication function",
                metadata: [
                    "provider": "\(self.providerName)", "function.command": "\(self.configuration.command[0])",
                    "error": "\(String(cString: strerror(code)))",
                ]
            )
            throw .unavailable("the authentication function cannot be started; see the daemon's log")
        }
        guard case .object(let answer)? = try? JSONDecoder().decode(JSONValue.self, from: Data(outcome.output))
        else {
            throw .invalidCredentials("the authentication function's output is not a JSON object")
        }
        if let error = answer["error"] {
            guard case .string(let message) = error, !message.isEmpty else {
                throw .invalidCredentials("the authentication function refused the login")
            }
            throw .invalidCredentials(Self.printable(message))
        }
        guard case .string(let subject)? = answer["subject"], !subject.isEmpty, subject.utf8.count <= 1024 else {
            throw .invalidCredentials(
                "the authentication function answered neither a subject (a string of 1 to 1024 bytes) nor an error"
            )
        }
        return Verdict(
            subject: subject,
            email: answer["email"]?.stringValue.map(Self.printable),
            name: answer["name"]?.stringValue.map(Self.printable)
        )
    }

    /// `text` without control characters and at most 500 characters long: the command's words reach clients and logs.
    static func printable(_ text: String) -> String {
        let cleaned = String(
            String.UnicodeScalarView(
                text.unicodeScalars.prefix(500).map { scalar in
                    scalar.properties.generalCategory == .control ? " " : scalar
                }
            )
        )
        return text.unicodeScalars.count > 500 ? cleaned + "…" : cleaned
    }

    /// A duration as the configuration writes it (`"5s"`, `"1500ms"`).
    static func format(milliseconds: Int64) -> String {
        for (suffix, factor) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
        where milliseconds >= factor && milliseconds % factor == 0 {
            return "\(milliseconds / factor)\(suffix)"
        }
        return "\(milliseconds)ms"
    }
}
