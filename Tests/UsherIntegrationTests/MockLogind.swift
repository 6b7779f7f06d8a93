import Foundation
import UsherTestSupport

/// A logind this project did not write: python-dbusmock's `logind` template on a private D-Bus daemon, which usherd is
/// given as its system bus (`DBUS_SYSTEM_BUS_ADDRESS`). Driven with `busctl`, as an administrator would poke logind.
final class MockLogind: @unchecked Sendable {
    // @unchecked: the processes are started and stopped only by the test that owns this object, one call at a time.
    let directory: TestDirectory
    let socketPath: String
    var address: String { "unix:path=\(self.socketPath)" }
    /// The environment usherd and the tools are run with: the test's, with this bus as the system bus.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = self.address
        return environment
    }
    private var bus: SpawnedProcess?
    private var mock: SpawnedProcess?

    init() throws {
        self.directory = try TestDirectory()
        self.socketPath = self.directory.file("system_bus_socket")
    }

    /// Starts the bus and the mock, and waits until logind's name is on the bus.
    func start() async throws {
        unlink(self.socketPath)
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(self.socketPath)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
              </policy>
            </busconfig>
            """
        try self.directory.write("bus.conf", config)
        let log = self.directory.file("bus.log")
        if !FileManager.default.fileExists(atPath: log) {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try handle.seekToEnd()
        self.bus = try SpawnedProcess(
            "/usr/bin/dbus-daemon",
            ["--config-file=\(self.directory.file("bus.conf"))", "--nofork", "--nopidfile"],
            stdout: .descriptor(handle.fileDescriptor),
            stderr: .descriptor(handle.fileDescriptor)
        )
        try handle.close()
        try await eventually { FileManager.default.fileExists(atPath: self.socketPath) }
        try await self.startLogind()
    }

    /// Starts logind's mock on the bus (again), and waits until its name is on the bus.
    func startLogind() async throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: self.directory.file("bus.log")))
        try handle.seekToEnd()
        // Debian's python3-dbusmock is for the system's Python, whatever python3 the PATH finds first.
        self.mock = try SpawnedProcess(
            "/usr/bin/python3",
            ["-m", "dbusmock", "--system", "--template", "logind"],
            environment: self.environment,
            stdout: .descriptor(handle.fileDescriptor),
            stderr: .descriptor(handle.fileDescriptor)
        )
        try handle.close()
        try await eventually {
            let owner = try await self.busctl(["status", "org.freedesktop.login1"])
            return owner.status == 0
        }
    }

    /// Stops logind's mock only: the bus stays, and says logind's name has no owner any more.
    func stopLogind() async throws {
        guard let mock = self.mock else { return }
        mock.terminate()
        _ = try await mock.exit()
        self.mock = nil
    }

    /// Stops the mock and the bus: usherd sees its system bus go away.
    func stop() async throws {
        for process in [self.mock, self.bus].compactMap({ $0 }) {
            process.terminate()
            _ = try await process.exit()
        }
        self.mock = nil
        self.bus = nil
    }

    var log: String { (try? String(contentsOfFile: self.directory.file("bus.log"), encoding: .utf8)) ?? "" }

    /// Runs busctl on this bus.
    @discardableResult
    func busctl(_ arguments: [String]) async throws -> ProcessOutput {
        try await runProcess("/usr/bin/busctl", ["--system", "--quiet"] + arguments, environment: self.environment)
    }

    /// Calls a method on logind's mock and fails the test when it fails.
    func call(_ path: String, _ interface: String, _ method: String, _ arguments: [String] = []) async throws {
        let output = try await self.busctl(["call", "org.freedesktop.login1", path, interface, method] + arguments)
        guard output.status == 0 else {
            throw TestSupportError("busctl call \(method) failed: \(output.stderr)")
        }
    }

    static let manager = "/org/freedesktop/login1"
    static let mockInterface = "org.freedesktop.DBus.Mock"

    static func sessionPath(_ id: String) -> String { "/org/freedesktop/login1/session/\(id)" }

    /// Adds a session on seat0 (active or not), and tells logind's subscribers as logind does (`SessionNew`). The
    /// template makes it the seat's ActiveSession whether or not it is active: usherd must go by each session's Active.
    func addSession(_ id: String, uid: UInt32, user: String, active: Bool) async throws {
        try await self.call(
            Self.manager,
            Self.mockInterface,
            "AddSession",
            ["ssusb", id, "seat0", "\(uid)", user, active ? "true" : "false"]
        )
        try await self.call(
            Self.manager,
            Self.mockInterface,
            "EmitSignal",
            ["sssav", "org.freedesktop.login1.Manager", "SessionNew", "so", "2", "s", id, "o", Self.sessionPath(id)]
        )
    }

    /// Sets a session's Active, as logind does when it switches sessions (PropertiesChanged on the session only).
    func setActive(_ id: String, _ active: Bool) async throws {
        try await self.call(
            Self.sessionPath(id),
            Self.mockInterface,
            "UpdateProperties",
            ["sa{sv}", "org.freedesktop.login1.Session", "1", "Active", "b", active ? "true" : "false"]
        )
    }

    /// logind's `Lock` / `Unlock` signal to the session (what `loginctl lock-session` makes logind send).
    func lock(_ id: String) async throws {
        try await self.call(Self.sessionPath(id), "org.freedesktop.login1.Session", "Lock")
    }

    func unlock(_ id: String) async throws {
        try await self.call(Self.sessionPath(id), "org.freedesktop.login1.Session", "Unlock")
    }

    /// The session's LockedHint, as a screen locker sets it.
    func setLockedHint(_ id: String, _ locked: Bool) async throws {
        try await self.call(
            Self.sessionPath(id),
            "org.freedesktop.login1.Session",
            "SetLockedHint",
            ["b", locked ? "true" : "false"]
        )
    }

    deinit {
        for process in [self.mock, self.bus].compactMap({ $0 }) { process.terminate() }
    }
}
