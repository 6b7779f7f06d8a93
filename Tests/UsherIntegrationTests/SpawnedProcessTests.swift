import Foundation
import Testing
import UsherTestSupport

/// What keeps one test's programs off another test's pipes (`SpawnedProcess`, `ProcessPipe`): a program the tests start
/// holds its three standard streams and nothing else of the test process, and a test's pipe is close-on-exec. Foundation's
/// `Process` let a program inherit another test's pipe, and a test waited forever for its end of file.
@Suite(.timeLimit(.minutes(1)))
struct SpawnedProcessTests {
    @Test func aProgramHoldsItsStandardStreamsAndNothingElseOfTheTests() async throws {
        // Descriptors of the test process that a careless spawn would hand on: a pipe, and a plain file.
        let pipe = try ProcessPipe()
        let directory = try TestDirectory()
        defer { directory.remove() }
        try directory.write("open", "")
        let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: directory.file("open")))
        defer { try? file.close() }
        #expect(fcntl(pipe.writing.fileDescriptor, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(pipe.reading.fileDescriptor, F_GETFD) & FD_CLOEXEC != 0)

        let program = try SpawnedProcess("/bin/sleep", ["60"])
        // posix_spawn returns once the program was executed; what it opens itself (sleep's locale files) is its own.
        // None of what it holds is the test's pipe or file.
        func identity(_ status: stat) -> [UInt64] { [UInt64(status.st_dev), UInt64(status.st_ino)] }
        var ours: [[UInt64]] = []
        for descriptor in [pipe.reading.fileDescriptor, pipe.writing.fileDescriptor, file.fileDescriptor] {
            var status = stat()
            #expect(fstat(descriptor, &status) == 0)
            ours.append(identity(status))
        }
        let table = "/proc/\(program.processIdentifier)/fd"
        let held = try FileManager.default.contentsOfDirectory(atPath: table)
        #expect(held.contains("0") && held.contains("1") && held.contains("2"))
        for descriptor in held {
            var status = stat()
            guard stat("\(table)/\(descriptor)", &status) == 0 else { continue }
            #expect(!ours.contains(identity(status)), "descriptor \(descriptor) of the program is one of the test's")
        }
        #expect(program.isRunning)

        // Its exit is an event it is waited for, and its status is the signal that ended it.
        program.signal(SIGKILL)
        #expect(try await program.exit() == SIGKILL)
        #expect(!program.isRunning)
    }

    @Test func theOutputIsReadWholeAndTheExitStatusKept() async throws {
        let output = try await runProcess(
            "/bin/sh",
            ["-c", "head -c 200000 /dev/zero | tr '\\0' x; echo err >&2; exit 3"]
        )
        #expect(output.status == 3)
        // More than a pipe holds: read while the program writes, to the end.
        #expect(output.stdout == String(repeating: "x", count: 200_000))
        #expect(output.stderr == "err\n")
    }
}
