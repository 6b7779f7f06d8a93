import Foundation

/// Authentication-function scripts for tests: one `/bin/sh` script whose behaviour the payload's `mode` picks.
///
/// Payload `{"mode": M, "user": U}`; modes:
/// - `accept`: `{"subject": U, "email": "U@example.com", "name": "Hook User"}`
/// - `refuse`: `{"error": "no such badge"}`
/// - `hang`: sleeps 30 s (past any test's timeout)
/// - `crash`: kills itself with SIGSEGV
/// - `garbage`: prints text that is not JSON
/// - `array`: prints a JSON array
/// - `huge`: prints 10 MB
/// - `fail`: prints an acceptance, then exits with status 3
/// - `env`: accepts with the subject listing its environment (`NAME=value,` each)
/// - `timed`: sleeps 0.3 s and records its start and end times (nanoseconds) in `runs/<pid>` next to the script
/// - `stderr`: writes to stderr, then accepts
package enum TestHooks {
    package static let script = #"""
        #!/bin/sh
        payload=$(cat)
        field() { printf '%s' "$payload" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
        user=$(field user)
        case "$(field mode)" in
        accept) printf '{"subject":"%s","email":"%s@example.com","name":"Hook User"}\n' "$user" "$user" ;;
        refuse) printf '{"error":"no such badge"}\n' ;;
        hang) sleep 30 ;;
        crash) kill -SEGV $$ ;;
        garbage) echo 'this is not JSON' ;;
        array) echo '[1, 2, 3]' ;;
        huge) head -c 10000000 /dev/zero | tr '\0' 'x' ;;
        fail) printf '{"subject":"%s"}\n' "$user"; exit 3 ;;
        env) printf '{"subject":"%s"}\n' "$(env | sort | tr '\n' ',')" ;;
        timed)
            start=$(date +%s%N)
            sleep 0.3
            end=$(date +%s%N)
            echo "$start $end" > "$(dirname "$0")/runs/$$"
            printf '{"subject":"%s"}\n' "$user" ;;
        stderr) echo "debugging output from the hook" >&2; printf '{"subject":"%s"}\n' "$user" ;;
        *) printf '{"error":"unknown mode"}\n' ;;
        esac
        """#

    /// Writes the script to `hook.sh` in `directory` (mode 755) with an empty `runs/`; returns its path.
    package static func install(in directory: TestDirectory) throws -> String {
        try directory.writeExecutable("hook.sh", Self.script)
        let path = directory.file("hook.sh")
        try FileManager.default.createDirectory(atPath: directory.file("runs"), withIntermediateDirectories: true)
        return path
    }

    /// The `(start, end)` times the `timed` runs recorded.
    package static func runs(in directory: TestDirectory) throws -> [(start: Int64, end: Int64)] {
        try FileManager.default.contentsOfDirectory(atPath: directory.file("runs")).map { name in
            let text = try String(contentsOfFile: directory.file("runs/\(name)"), encoding: .utf8)
            let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Int64($0) }
            guard numbers.count == 2 else { throw TestSupportError("bad run record \(name): \(text)") }
            return (numbers[0], numbers[1])
        }
    }

    /// The largest number of runs that were going on at the same instant.
    package static func maximumOverlap(_ runs: [(start: Int64, end: Int64)]) -> Int {
        // Ends sort before starts at the same instant: a run that ended is not running alongside one that began.
        let events = runs.flatMap { [($0.start, 1), ($0.end, -1)] }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
        var current = 0
        var maximum = 0
        for (_, change) in events {
            current += change
            maximum = max(maximum, current)
        }
        return maximum
    }
}
