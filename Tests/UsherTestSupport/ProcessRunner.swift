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
    let input = try ProcessPipe()
    let output = try ProcessPipe()
    let errors = try ProcessPipe()
    let process = try SpawnedProcess(
        executable,
        arguments,
        environment: environment,
        stdin: .descriptor(input.reading.fileDescriptor),
        stdout: .descriptor(output.writing.fileDescriptor),
        stderr: .descriptor(errors.writing.fileDescriptor)
    )
    try input.reading.close()
    try output.writing.close()
    try errors.writing.close()
    let deadline = ContinuousClock.now + timeout
    async let stdoutData = readToEnd(output.reading, until: deadline)
    async let stderrData = readToEnd(errors.reading, until: deadline)
    // A program that exits without reading its input closes the pipe: that is not the test's failure.
    try? input.writing.write(contentsOf: Data(stdin.utf8))
    try? input.writing.close()
    let status: Int32
    do {
        status = try await process.exit(within: timeout)
    } catch {
        throw TestSupportError("\(executable) \(arguments) did not finish within \(timeout)")
    }
    guard let stdout = await stdoutData, let stderr = await stderrData else {
        throw TestSupportError("\(executable) \(arguments) exited, but something it started kept its output open")
    }
    return ProcessOutput(
        status: status,
        stdout: String(decoding: stdout, as: UTF8.self),
        stderr: String(decoding: stderr, as: UTF8.self)
    )
}

/// Reads until end of file, or nil if there is none by `deadline` (a hang guard). Each wait for input is
/// `awaitReadable`'s, off the cooperative pool; each read then finds input or the end, and does not block.
package func readToEnd(_ handle: FileHandle, until deadline: ContinuousClock.Instant) async -> Data? {
    let descriptor = handle.fileDescriptor
    var data = Data()
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while await awaitReadable(descriptor, until: deadline) {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count == 0 { return data }
        if count < 0 {
            if errno == EINTR || errno == EAGAIN { continue }
            return data
        }
        data.append(contentsOf: chunk[..<count])
    }
    return nil
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
