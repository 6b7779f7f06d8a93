import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// A login in progress is the uid's that began it (issue 36, item 6), against the real daemon and a real OpenID
/// Connect server: another uid that learns a device login's id (it is never logged whole) cannot collect it, onto its
/// own user or any other.
@Suite(
    .integrationHangGuard,
    .oidcServer,
    .enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root")
)
struct InteractiveLoginOwnershipTests {
    @Test func onlyTheUidThatBeganADeviceLoginCollectsIt() async throws {
        let server = try OIDCIntegrationTests.server()
        let config =
            server.providers().replacingOccurrences(of: "[daemon]\n", with: "[daemon]\nsocket_mode = \"0666\"\n")
            + "\n[[access.rule]]\nuid = 65534\nallow = [\"read\", \"token\", \"manage\"]\n"
        let daemon = try DaemonProcess(config: config)
        chmod(daemon.directory.path, 0o711)
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let root = try daemon.connect()
            root.timeout = hangGuard
            let begun = try await root.result("login_begin", ["provider": "device", "type": "device_code"])
            let loginID = try #require(begun["login_id"]?.stringValue)
            let userCode = try #require(begun["user_code"]?.stringValue)
            let verification = try #require(begun["verification_uri"]?.stringValue)
            let approved = try await server.browser(["device", verification, userCode, "erin", "erin-password"])
            #expect(approved.status == 0, "\(approved.stderr)")

            // Another uid with `manage` that has the id: refused, and the login is still root's to collect.
            let nobody = try await OtherUser.connect(path: daemon.socketPath)
            nobody.timeout = hangGuard
            let stolen = try await nobody.call("login_wait", ["login_id": .string(loginID)])
            #expect(stolen["error"]?["code"] == "permission_denied", "\(stolen)")
            #expect(stolen["error"]?["message"]?.stringValue?.contains("another uid") == true)
            let collected = try await root.result("login_wait", ["login_id": .string(loginID)])
            #expect(collected["user"]?["email"] == "erin@example.com")

            // The id was never written whole to the log (the daemon logs at debug in tests).
            let random = try #require(loginID.split(separator: ".").last.map(String.init))
            try await eventually { daemon.log.contains("action=login_wait outcome=permission_denied") }
            #expect(!daemon.log.contains(random))
            #expect(daemon.log.contains("login.id=device.\(random.prefix(4))…"))
        }
    }
}
