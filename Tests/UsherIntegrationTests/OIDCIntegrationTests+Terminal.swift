import Foundation
import Testing
import UsherTestSupport

extension OIDCIntegrationTests {
    /// On a terminal, the device login shows the code, the URL, the time left running down and how to cancel; Ctrl-C
    /// cancels it; approving it at the provider ends it.
    @Test func deviceLoginOnATerminalCountsDown() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let arguments = ["--socket", daemon.socketPath, "login", "--provider", "device", "--device"]
            let cancelled = try TerminalSession(try Self.usher(), arguments, environment: ["NO_COLOR": "1"])
            try await cancelled.waitFor("left (Ctrl-C to cancel)")
            try cancelled.interrupt()
            #expect(try await cancelled.exitStatus() != 0)

            // NO_COLOR: the code is then plain text on its own line.
            let session = try TerminalSession(try Self.usher(), arguments, environment: ["NO_COLOR": "1"])
            try await session.waitFor("left (Ctrl-C to cancel)")
            // The terminal ends lines with CR LF, and the countdown rewrites its line after a CR.
            func lines() -> [String] {
                session.text.replacingOccurrences(of: "\r", with: "\n").split(separator: "\n").map {
                    String($0).replacingOccurrences(of: "\u{1B}[K", with: "")
                }
            }
            // It runs down: the line is rewritten with less time left.
            try await eventually { Set(lines().filter { $0.hasSuffix("left (Ctrl-C to cancel)") }).count >= 2 }
            let lines = lines()
            let visit = try #require(lines.first { $0.hasPrefix("To log in, visit ") })
            let uri = try #require(visit.split(separator: " ").first { $0.hasPrefix("http") }).description
            #expect(uri == server.issuer + "/device/")
            let code = try #require(
                lines.first { line in line.count == 8 && line.allSatisfy { $0.isUppercase || $0.isNumber } },
                "\(session.text)"
            )
            // The time left: minutes and seconds, from the provider's expiry.
            let left = try #require(lines.last { $0.contains("left (Ctrl-C to cancel)") })
            #expect(left.hasPrefix("Waiting for the login: ") && left.contains("m"), "\(left)")

            let browser = try await server.browser(["device", uri, code, "carol", "carol-password"])
            #expect(browser.status == 0, "\(browser.stderr)")
            #expect(try await session.exitStatus() == 0, "\(session.text)")
            #expect(session.text.contains("carol@example.com"))
        }
    }
}
