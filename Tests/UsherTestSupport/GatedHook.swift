import Foundation

/// An authentication function for concurrency tests that never depends on the machine's speed: every run marks that
/// it started (`started/<user>`), then waits until the test opens the gate (`open`), then records its start and end
/// times in `runs/<user>` (the format `TestHooks.runs` reads) and accepts with the subject `gated-<user>`.
///
/// So a test can wait until exactly as many runs as allowed are under way, check what it wants while they are held,
/// and then let them all finish. The wait in the script is bounded (60 s) only so that a failed test leaves nothing
/// running.
package enum GatedHook {
    package static let script = #"""
        #!/bin/sh
        dir=$(dirname "$0")
        user=$(sed -n 's/.*"user":"\([^"]*\)".*/\1/p')
        start=$(date +%s%N)
        : > "$dir/started/$user"
        i=0
        while [ ! -e "$dir/open" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
        end=$(date +%s%N)
        echo "$start $end" > "$dir/runs/$user"
        printf '{"subject":"gated-%s"}\n' "$user"
        """#

    /// Writes the script to `gate.sh` in `directory` (mode 755) with empty `started/` and `runs/`; returns its path.
    package static func install(in directory: TestDirectory) throws -> String {
        try directory.writeExecutable("gate.sh", Self.script)
        let path = directory.file("gate.sh")
        for name in ["started", "runs"] {
            try FileManager.default.createDirectory(atPath: directory.file(name), withIntermediateDirectories: true)
        }
        return path
    }

    /// How many runs have started so far.
    package static func started(in directory: TestDirectory) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.file("started")).count) ?? 0
    }

    /// Waits (polling, up to the hang guard) until `count` runs have started.
    package static func waitUntilStarted(_ count: Int, in directory: TestDirectory) async throws {
        let deadline = ContinuousClock.now + hangGuard
        while Self.started(in: directory) < count {
            guard ContinuousClock.now < deadline else {
                throw TestSupportError(
                    "only \(Self.started(in: directory)) of \(count) runs started within \(hangGuard)"
                )
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Lets every held run, and every later one, finish.
    package static func open(in directory: TestDirectory) throws {
        try directory.write("open", "")
    }
}
