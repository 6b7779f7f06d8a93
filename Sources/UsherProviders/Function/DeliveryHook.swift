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

/// A command that delivers a local account's confirmation or password-reset token to its owner (`confirm_hook`,
/// `reset_hook` in `[providers.NAME.registration]`): a device has no mail server of its own, so whatever sends the
/// mail, the text message or the kiosk's printout is the operator's program.
///
/// It runs exactly as the authentication function does (`HookProcess`: supervised with everything it starts, killed
/// at its time limit, a limited number at once, `PATH`, `LANG` and `USHER_PROVIDER` its only environment). The token
/// never goes on its command line: standard input carries one JSON line, `{"email": "...", "purpose": "confirm" |
/// "reset", "token": "..."}`. Exit status 0 means delivered; anything else is a failure, logged without the token.
/// Its output is ignored but bounded; the first 4 KiB of standard error go to the debug log.
struct DeliveryHook: Sendable {
    let providerName: String
    /// `confirm` or `reset`: what the token is for, given to the command and named in the log.
    let purpose: String
    let configuration: FunctionHookConfiguration
    private let limiter: ConcurrencyLimiter
    private let logger: Logger

    init(providerName: String, purpose: String, configuration: FunctionHookConfiguration, logger: Logger) {
        self.providerName = providerName
        self.purpose = purpose
        self.configuration = configuration
        self.limiter = ConcurrencyLimiter(
            limit: configuration.maximumConcurrent,
            maximumWaiting: FunctionHook.maximumWaiting
        )
        self.logger = logger
    }

    /// Runs the command with the email and the token.
    ///
    /// - Throws: `ProviderError.unavailable` when the run failed (the reason is in the log) or too many wait for it.
    func deliver(email: String, token: String) async throws(ProviderError) {
        let payload: JSONValue = [
            "email": .string(email), "token": .string(token), "purpose": .string(self.purpose),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let encoded = try? encoder.encode(payload) else {
            throw .unavailable("the \(self.purpose) hook's input cannot be encoded")
        }
        let input = Array(encoded) + [UInt8(ascii: "\n")]
        let arguments = self.configuration.command
        let supervisor = self.configuration.supervisor
        let environment = ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "USHER_PROVIDER": self.providerName]
        let timeout = Duration.milliseconds(self.configuration.timeoutMilliseconds)
        let outcome = await self.limiter.withPermit {
            await HookProcess.start(
                arguments: arguments,
                supervisor: supervisor,
                environment: environment,
                input: input,
                timeout: timeout,
                outputLimit: FunctionHook.outputLimit,
                errorLimit: FunctionHook.errorLimit
            )
        }
        var metadata: Logger.Metadata = ["provider": "\(self.providerName)", "hook": "\(self.purpose)"]
        guard let outcome else {
            self.logger.warning("\(self.purpose) hook busy: too many runs wait for it already", metadata: metadata)
            throw .unavailable("the \(self.purpose) hook is busy; try again later")
        }
        if !outcome.errors.isEmpty {
            self.logger.debug(
                "\(self.purpose) hook wrote to stderr",
                metadata: metadata.merging(["hook.stderr": "\(String(decoding: outcome.errors, as: UTF8.self))"]) {
                    $1
                }
            )
        }
        let failure: String
        switch outcome.ending {
        case .exited(0):
            return
        case .exited(let status): failure = "exited with status \(status)"
        case .signaled(let signal): failure = "crashed (signal \(signal))"
        case .timedOut:
            failure =
                "did not finish within \(FunctionHook.format(milliseconds: self.configuration.timeoutMilliseconds))"
        case .outputTooLarge: failure = "wrote more than \(FunctionHook.outputLimit) bytes"
        case .cancelled: failure = "was cancelled"
        case .notStarted(let code): failure = "cannot be started: \(String(cString: strerror(code)))"
        }
        metadata["reason"] = "\(failure)"
        metadata["hook.command"] = "\(self.configuration.command.first ?? "")"
        self.logger.error("\(self.purpose) hook failed; the token was not delivered", metadata: metadata)
        throw .unavailable("the \(self.purpose) hook failed; see the daemon's log")
    }
}
