import Testing

/// How long a test waits for something it expects (an answer, a line, a process to start or exit) before it fails.
///
/// A hang guard, never an assertion about speed: a test waits for the event it expects and this bound only turns a
/// hang into a failure. It is generous because the suite must pass on a 2-core machine that is also building: with
/// the suites of issue 36 and 42 beside the rest, a 4 MB answer of a debug daemon or `nm` of the debug CLI took over a
/// minute in `make test` while every test ran at once, so it is three (still well inside a test's five).
package let hangGuard: Duration = .seconds(180)

extension Trait where Self == TimeLimitTrait {
    /// The time limit of an integration test, which starts real daemons: a hang guard for the whole test, generous
    /// because its daemons may queue for `DaemonSlots` behind other tests on a busy 2-core machine.
    package static var integrationHangGuard: Self { .timeLimit(.minutes(5)) }
}

/// Waits until `condition` holds, checking every few milliseconds; fails after `timeout`, a hang guard.
///
/// For state a test cannot be told about (a file appearing, a count the daemon reports): the test waits for the state,
/// however long this machine takes, instead of checking a fixed number of times.
package func eventually(
    timeout: Duration = hangGuard,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestSupportError("condition not met within \(timeout)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}
