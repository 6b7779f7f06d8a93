/// How long a test waits for something it expects (an answer, a line, a process to start or exit) before it fails.
///
/// A hang guard, never an assertion about speed: a test waits for the event it expects and this bound only turns a
/// hang into a failure. It is generous because the suite must pass on a 2-core machine that is also building.
package let hangGuard: Duration = .seconds(60)
