import Crypto
import Foundation
import NIOPosix
import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

@testable import UsherProviders

#if canImport(Glibc)
import Glibc
#endif

/// The process runner behind `function` credentials: what a command inherits, and how a run ends.
@Suite(.timeLimit(.minutes(2)))
struct ProcessRunnerTests {
    @Test func commandsGetNoDescriptorsOfTheDaemon() async throws {
        // A descriptor without close-on-exec, as a careless library might leave one; numbered high, so that it cannot
        // be mistaken for the one ls opens.
        let opened = open("/dev/null", O_RDONLY)
        let leaked = fcntl(opened, F_DUPFD, 200)
        close(opened)
        #expect(leaked >= 200)
        defer { close(leaked) }
        let outcome = await HookProcess.start(
            arguments: ["/bin/ls", "/proc/self/fd"],
            supervisor: try LocalProviderOutsideCredentialsTests.supervisor(),
            environment: [:],
            input: [],
            timeout: .seconds(60),
            outputLimit: 65_536,
            errorLimit: 4096
        )
        #expect(outcome.ending == .exited(0))
        let descriptors = String(decoding: outcome.output, as: UTF8.self).split(separator: "\n").compactMap {
            Int32($0)
        }
        // 0, 1, 2, and the one ls opened to list the directory.
        #expect(descriptors.count == 4 && descriptors.prefix(3) == [0, 1, 2], "\(descriptors)")
        #expect(!descriptors.contains(leaked))
    }

    @Test func commandsThatCannotStartAreReported() async throws {
        let outcome = await HookProcess.start(
            arguments: ["/nonexistent/hook"],
            supervisor: try LocalProviderOutsideCredentialsTests.supervisor(),
            environment: [:],
            input: [],
            timeout: .seconds(60),
            outputLimit: 65_536,
            errorLimit: 4096
        )
        #expect(outcome.ending == .notStarted(ENOENT))
        let setup = try LocalProviderOutsideCredentialsTests.Setup()
        setup.configuration.function = FunctionHookConfiguration(
            command: ["/nonexistent/hook"],
            supervisor: try LocalProviderOutsideCredentialsTests.supervisor()
        )
        try await setup.run { fixture in
            #expect(
                await LocalProviderOutsideCredentialsTests.failure(
                    fixture.provider,
                    LocalProviderOutsideCredentialsTests.function("accept")
                )
                    == .unavailable("the authentication function cannot be started; see the daemon's log")
            )
        }
    }

    /// Cancelling the task of a run (its request went away) kills the command and everything it started at once: the
    /// run returns only when they are gone, a grandchild in a session of its own included.
    @Test func cancellingARunKillsTheCommandAndWhatItStarted() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        // The command records its own process ID and a `setsid` grandchild's, then sleeps far past the test.
        try directory.writeExecutable(
            "sleeper.sh",
            """
            #!/bin/sh
            setsid sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 300' "$(dirname "$0")/grandchild" &
            echo $$ > "$(dirname "$0")/command.tmp" && mv "$(dirname "$0")/command.tmp" "$(dirname "$0")/command"
            exec sleep 300
            """
        )
        let supervisor = try LocalProviderOutsideCredentialsTests.supervisor()
        var recorded: [pid_t] = []
        defer { for pid in recorded { kill(pid, SIGKILL) } }
        let outcome = try await withThrowingTaskGroup(of: HookProcess.Outcome?.self) { group in
            group.addTask {
                await HookProcess.start(
                    arguments: [directory.file("sleeper.sh")],
                    supervisor: supervisor,
                    environment: [:],
                    input: [],
                    timeout: .seconds(600),
                    outputLimit: 65_536,
                    errorLimit: 4096
                )
            }
            // Both are running (waiting for that, not for time to pass)...
            try await eventually {
                recorded = ["command", "grandchild"].compactMap { name in
                    (try? String(contentsOfFile: directory.file(name), encoding: .utf8))
                        .flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                }
                return recorded.count == 2
            }
            #expect(recorded.allSatisfy { kill($0, 0) == 0 })
            // ...until the run is cancelled.
            group.cancelAll()
            return try await group.next() ?? nil
        }
        #expect(outcome?.ending == .cancelled)
        // Gone, and reaped, by the time the run returned.
        for pid in recorded {
            #expect(kill(pid, 0) == -1 && errno == ESRCH, "process \(pid) is still there")
        }
    }
}
