import Foundation
import Synchronization
import Testing
import UsherTestSupport

/// A file a test writes and runs at once never fails with `ETXTBSY` ("Text file busy"), however many programs other
/// tests start meanwhile (issue 42: `DocumentationTests` failed so once in three runs of `make test`).
///
/// Programs are started here without pause while scripts are written and run: each start is a moment at which a
/// child holds a copy of the test process's descriptors. Written by the test process itself, a script was sometimes
/// refused; written by `ExecutableFile` (a shell of its own), never, whatever the machine's speed.
@Suite(.integrationHangGuard)
struct ExecutableFileTests {
    static let scripts = 30

    @Test func aScriptRunsTheMomentItIsWrittenWhileOtherProgramsStart() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        // A box: an `Atomic` cannot be captured by the tasks themselves (it is not copyable).
        final class Flag: Sendable { let value = Atomic<Bool>(false) }
        let flag = Flag()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<1 {
                group.addTask {
                    while !flag.value.load(ordering: .relaxed) {
                        try await SpawnedProcess("/bin/true", []).exit()
                    }
                }
            }
            defer { flag.value.store(true, ordering: .relaxed) }
            // Enough to catch the race (a script written by the test process was refused within its first few), and
            // short: the spawner is a load on the whole suite for as long as this test runs, and other tests' hang
            // guards ran out beside 200 scripts and two spawners.
            for index in 0..<Self.scripts {
                let name = "script-\(index)"
                try directory.writeExecutable(name, "#!/bin/sh\necho \(index)\n")
                let result = try await runProcess(directory.file(name), [])
                #expect(result.status == 0 && result.stdout == "\(index)\n", "run \(index): \(result.stderr)")
            }
            flag.value.store(true, ordering: .relaxed)
            try await group.waitForAll()
        }
    }
}
