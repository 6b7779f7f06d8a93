import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Hostile text and systemd's notification socket: a value can never add an assignment of its own.
@Suite(.integrationHangGuard)
struct NotifyInjectionTests {
    /// Every key usherd may send to systemd; a line with any other key was injected.
    static let notifyKeys: Set<Substring> = [
        "READY", "STATUS", "RELOADING", "MONOTONIC_USEC", "STOPPING", "WATCHDOG", "EXTEND_TIMEOUT_USEC", "ERRNO",
    ]

    /// Every datagram that arrives within `timeout` of the last one.
    static func drain(_ notify: NotifyListener, timeout: Duration = .milliseconds(300)) async throws -> [String] {
        var messages: [String] = []
        while let message = try await notify.next(timeout: timeout) { messages.append(message) }
        return messages
    }

    static func expectNoInjectedAssignment(_ messages: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for message in messages {
            for line in message.split(separator: "\n", omittingEmptySubsequences: false) {
                let key = line.split(separator: "=", maxSplits: 1).first ?? ""
                #expect(
                    Self.notifyKeys.contains(key),
                    "injected: \(message.debugDescription)",
                    sourceLocation: sourceLocation
                )
                #expect(line != "WATCHDOG=trigger", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func anEmailWithLineBreaksNeverReachesTheNotifySocketAsAssignments() async throws {
        let issuer = TestIssuerKey.p256(kid: "k1")
        let hostileEmail = "m@x\nWATCHDOG=trigger\nSTOPPING=1"
        let config = """
            [providers.local]
            type = "local"
            [providers.local.jwt]
            issuer = "https://auth.example.com"
            audience = "usher"
            jwks_file = "%JWKS%"
            """
        let daemon = try DaemonProcess()
        try await DaemonProcess.using(daemon) { daemon in
            try daemon.directory.write("jwks.json", TestJWT.keySet([issuer.publicJWK()]))
            try daemon.directory.write(
                "usherd.toml",
                config.replacingOccurrences(of: "%JWKS%", with: daemon.directory.file("jwks.json"))
            )
            let notify = try NotifyListener(path: daemon.directory.file("notify"))
            let environment = SystemdTests.environment(["NOTIFY_SOCKET": notify.address])
            try await daemon.start(environment: environment, waitForSocket: false)
            _ = try await notify.waitFor("READY=1")

            // A JWT whose email claim holds line breaks is refused at login, naming the claim; nothing is stored.
            let now = Int64(Date().timeIntervalSince1970)
            let token = try issuer.sign([
                "iss": "https://auth.example.com", "aud": "usher", "sub": "mallory", "email": .string(hostileEmail),
                "iat": .int(now), "exp": .int(now + 600),
            ])
            let client = try daemon.connect()
            let refused = try await client.call("login", ["credentials": ["type": "jwt", "token": .string(token)]])
            #expect(refused["error"]?["code"] == "invalid_credentials")
            #expect(refused["error"]?["message"]?.stringValue?.contains("email contains a control character") == true)
            #expect(try await client.result("list_users")["users"]?.arrayValue == [])
            // A clean one goes through, and the status line follows it.
            let clean = try issuer.sign([
                "iss": "https://auth.example.com", "aud": "usher", "sub": "ann", "email": "ann@example.com",
                "iat": .int(now), "exp": .int(now + 600),
            ])
            _ = try await client.result("login", ["credentials": ["type": "jwt", "token": .string(clean)]])
            _ = try await notify.waitFor("STATUS=1 user logged in, active: ann@example.com")
            #expect(try await daemon.stop() == 0)
            Self.expectNoInjectedAssignment(try await Self.drain(notify))

            // A database written before claims were checked may hold such an email already: the status line that
            // names the active user escapes it instead of passing the line breaks on.
            let update = try await runProcess(
                "/usr/bin/sqlite3",
                [
                    "\(daemon.stateDirectory)/usher.sqlite",
                    "UPDATE user SET email = 'm@x' || char(10) || 'WATCHDOG=trigger' || char(10) || 'STOPPING=1'",
                ]
            )
            try #require(update.status == 0, "\(update.stderr)")
            try await daemon.start(environment: environment, waitForSocket: false)
            let (ready, before) = try await notify.waitFor("READY=1")
            #expect(
                ready.contains(#"STATUS=1 user logged in, active: m@x\nWATCHDOG=trigger\nSTOPPING=1"#),
                "\(ready.debugDescription)"
            )
            #expect(ready.split(separator: "\n").count == 2, "READY=1 and STATUS= only: \(ready.debugDescription)")
            Self.expectNoInjectedAssignment(before + [ready])
            // READY=1 precedes the services (and their signal handlers); an answer means they run.
            #expect(try await daemon.connect().result("hello")["server"] == "usherd")
            kill(daemon.pid, SIGTERM)
            _ = try await notify.waitFor("STOPPING=1")
            #expect(try await daemon.stop() == 0)
            Self.expectNoInjectedAssignment(try await Self.drain(notify))
        }
    }
}
