import Foundation
import Testing

/// The outcome of a finished process.
package struct ProcessOutput: Sendable {
    package var status: Int32
    package var stdout: String
    package var stderr: String
}

/// Runs a program to completion with the given standard input, capturing its output. Killed after `timeout`.
package func runProcess(
    _ executable: String,
    _ arguments: [String],
    stdin: String = "",
    environment: [String: String]? = nil,
    timeout: Duration = hangGuard
) async throws -> ProcessOutput {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let input = Pipe()
    let output = Pipe()
    let errors = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    try input.fileHandleForWriting.write(contentsOf: Data(stdin.utf8))
    try input.fileHandleForWriting.close()
    async let stdoutData = readToEnd(output.fileHandleForReading)
    async let stderrData = readToEnd(errors.fileHandleForReading)
    let deadline = ContinuousClock.now + timeout
    while process.isRunning {
        if ContinuousClock.now > deadline {
            process.terminate()
            throw TestSupportError("\(executable) \(arguments) did not finish within \(timeout)")
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    return ProcessOutput(
        status: process.terminationStatus,
        stdout: String(decoding: await stdoutData, as: UTF8.self),
        stderr: String(decoding: await stderrData, as: UTF8.self)
    )
}

/// Reads until end of file on a Dispatch thread: a blocking read must never occupy one of the few threads of the
/// cooperative pool, which every other test shares.
package func readToEnd(_ handle: FileHandle) async -> Data {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: handle.readDataToEndOfFile()) }
    }
}

/// Starts the built usherd on `config` in a fresh directory and expects it to refuse: exit status 78, with a message
/// that names `key` and the configuration file. Returns the daemon's output for further checks.
@discardableResult
package func expectConfigurationError(
    _ config: String,
    naming key: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> ProcessOutput {
    let directory = try TestDirectory()
    defer { directory.remove() }
    try directory.write("usherd.toml", config)
    let result = try await runProcess(
        try BuiltProducts.path(of: "usherd"),
        [
            "--config", directory.file("usherd.toml"), "--socket", directory.file("usher.sock"),
            "--state-directory", directory.file("state"),
        ]
    )
    #expect(result.status == 78, "\(result.stderr)", sourceLocation: sourceLocation)
    #expect(result.stderr.contains(directory.file("usherd.toml")), "\(result.stderr)", sourceLocation: sourceLocation)
    #expect(result.stderr.contains(key + ":"), "\(result.stderr)", sourceLocation: sourceLocation)
    #expect(!FileManager.default.fileExists(atPath: directory.file("usher.sock")), sourceLocation: sourceLocation)
    return result
}
