import Foundation

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
    timeout: Duration = .seconds(30)
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
