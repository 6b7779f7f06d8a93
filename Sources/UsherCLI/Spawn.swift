import Subprocess
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Running another program and waiting for it, through swift-subprocess (FoundationEssentials only on Linux, which the
/// CLI links already; never Foundation, see Output). `usher exec` replaces itself instead (`execvp`), and the browser
/// is started without waiting for it (`OIDCLogin`).
///
/// The program gets the core file limit it would have had (`CoreDumps`): it is back in place from just before the
/// program starts until swift-subprocess calls the run's body, the moment it has started.
enum Spawn {
    /// Runs `arguments` (the program looked up in `PATH`) with this process's standard streams and waits for it; an
    /// error unless it exits 0.
    static func run(_ arguments: [String]) async throws {
        let result = try await Self.starting(arguments) {
            try await Subprocess.run(
                Self.executable(arguments[0]),
                arguments: Arguments(Array(arguments.dropFirst())),
                input: .currentStandardInput,
                output: .currentStandardOutput,
                error: .currentStandardError
            ) { _ in CoreDumps.started() }
        }
        guard result.terminationStatus.isSuccess else {
            throw CLIError("\(arguments.prefix(3).joined(separator: " ")) failed")
        }
    }

    /// Runs `arguments` with stdin from /dev/null and returns what it printed on stdout; nil when it exits non-zero.
    /// Its stderr is the caller's.
    ///
    /// - Throws: `CLIError` when the program cannot be started, or prints more than `limit` bytes.
    static func output(_ arguments: [String], limit: Int) async throws -> String? {
        let result = try await Self.starting(arguments) {
            try await Subprocess.run(
                Self.executable(arguments[0]),
                arguments: Arguments(Array(arguments.dropFirst())),
                input: .none,
                output: .bytes(limit: limit),
                error: .currentStandardError
            ) { _ in CoreDumps.started() }
        }
        guard result.terminationStatus.isSuccess else { return nil }
        return String(decoding: result.standardOutput, as: UTF8.self)
    }

    /// The program `name` names, as `execvp` finds it: at that path when it has a slash, else looked up in `PATH`.
    static func executable(_ name: String) -> Executable {
        name.contains("/") ? .path(FilePath(name)) : .name(name)
    }

    /// Starts `arguments` with `start`, with the inherited core limit in place while it starts; swift-subprocess's
    /// errors as the CLI's.
    static func starting<Result>(_ arguments: [String], _ start: () async throws -> Result) async throws -> Result {
        do {
            return try await CoreDumps.inheritedUntilStarted(start)
        } catch let error as SubprocessError {
            if error.code == .outputLimitExceeded { throw CLIError("\(arguments[0]) printed too much") }
            if error.code == .executableNotFound { throw CLIError("cannot run \(arguments[0]): not found in PATH") }
            let reason = error.underlyingError.map { String(cString: strerror($0.rawValue)) } ?? "\(error)"
            throw CLIError("cannot run \(arguments[0]): \(reason)")
        }
    }
}
