import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Requests made as another user (`nobody`, through `setpriv`), for tests where the peer's uid matters.
enum OtherUser {
    /// Sends `lines` as `nobody` on one connection and returns every answer.
    ///
    /// socat gives up 0.5 s after its input ends unless told otherwise (`-t`); a login that hashes a password, or
    /// thousands of pipelined answers, can take longer than that on a loaded machine, so it waits up to a minute for
    /// the daemon to answer everything and close.
    static func send(_ daemon: DaemonProcess, _ lines: [String]) async throws -> [JSONValue] {
        let output = try await runProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/socat", "-t", "60", "-",
                "UNIX-CONNECT:\(daemon.socketPath)",
            ],
            stdin: lines.map { $0 + "\n" }.joined()
        )
        #expect(output.status == 0, "\(output.stderr)")
        let answers = try output.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8))
        }
        try #require(answers.count == lines.count, "\(answers.count) answers to \(lines.count) requests")
        return answers
    }
}
