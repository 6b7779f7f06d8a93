import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The Varlink socket as a deployment meets it: where it listens, that it can be moved or turned off, and that a call
/// there is the same request as a line on the main socket (state, audit). The interface itself is tested with the
/// PyPI varlink client (Tests/varlink-client, `make test-varlink`).
@Suite(.integrationHangGuard)
struct VarlinkSocketTests {
    private static func isSocket(_ path: String) -> (socket: Bool, mode: mode_t) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return (false, 0) }
        return ((info.st_mode & S_IFMT) == S_IFSOCK, info.st_mode & 0o777)
    }

    @Test func theVarlinkSocketListensNextToTheMainOneWithItsMode() async throws {
        try await DaemonProcess.with(config: "[daemon]\nsocket_mode = \"0660\"\n") { daemon in
            let found = Self.isSocket(daemon.varlinkPath)
            #expect(found.socket && found.mode == 0o660)
            #expect(daemon.log.contains("Varlink interface io.usher.Session listening socket=\(daemon.varlinkPath)"))
            // One daemon behind both: a login on the main socket is the Varlink socket's current user.
            let lines = try daemon.connect()
            let user = try await lines.result("login", ["credentials": ["type": "anonymous"]])["user"]?["id"]
            let varlink = try LineConnection(path: daemon.varlinkPath)
            let current = try await varlink.varlink("io.usher.Session.CurrentUser")
            #expect(current["parameters"]?["user"]?["id"] == user)
            let info = try await varlink.varlink("org.varlink.service.GetInfo")
            #expect(info["parameters"]?["interfaces"] == ["org.varlink.service", "io.usher.Session"])
        }
    }

    @Test func aVarlinkCallIsAuditedAsTheSameRequest() async throws {
        try await DaemonProcess.with { daemon in
            let varlink = try LineConnection(path: daemon.varlinkPath)
            let login = try await varlink.varlink("io.usher.Session.Login", ["credentials": ["type": "anonymous"]])
            let id = try #require(login["parameters"]?["user"]?["id"]?.stringValue)
            try await eventually { daemon.log.contains("audit action=login outcome=ok") && daemon.log.contains(id) }
            let denied = try await varlink.varlink("io.usher.Session.SwitchUser", ["user_id": "u_nobody"])
            #expect(denied["error"] == "io.usher.Session.UserNotFound")
            try await eventually { daemon.log.contains("audit action=switch_user outcome=user_not_found") }
        }
    }

    @Test func theVarlinkSocketCanBeMoved() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let elsewhere = directory.file("v.sock")
        try await DaemonProcess.with(config: "[daemon]\nvarlink_socket = \"\(elsewhere)\"\n") { daemon in
            #expect(Self.isSocket(elsewhere).socket)
            #expect(!FileManager.default.fileExists(atPath: daemon.varlinkPath))
            let hello = try await LineConnection(path: elsewhere).varlink("io.usher.Session.Hello")
            #expect(hello["parameters"]?["server"] == "usherd")
            #expect(try await daemon.stop() == 0)
            // Like the main socket, it is removed when the daemon stops.
            #expect(!FileManager.default.fileExists(atPath: elsewhere))
        }
    }

    @Test func anEmptyVarlinkSocketTurnsItOff() async throws {
        try await DaemonProcess.with(config: "[daemon]\nvarlink_socket = \"\"\n") { daemon in
            let lines = try daemon.connect()
            #expect(try await lines.result("hello")["server"] == "usherd")
            #expect(!FileManager.default.fileExists(atPath: daemon.varlinkPath))
            #expect(!daemon.log.contains("Varlink interface"))
        }
    }

    @Test func aSubscriptionEndsWithTheDaemonAndSaysSo() async throws {
        try await DaemonProcess.with { daemon in
            let varlink = try LineConnection(path: daemon.varlinkPath)
            try varlink.sendVarlink("io.usher.Session.Subscribe", more: true)
            let subscribed = try #require(try await varlink.readVarlink())
            #expect(subscribed["continues"] == true)
            #expect(try await daemon.stop() == 0)
            let stopping = try #require(try await varlink.readVarlink())
            #expect(stopping["parameters"]?["event"] == "daemon_stopping")
            #expect(try await varlink.readVarlink() == nil)
        }
    }
}
