import Foundation
import NIOCore
import Testing
import UsherProtocol
import UsherServer
import UsherTestSupport

/// `[limits]` on connections, in-process (STYLE.md: limits are tested without a spawned daemon's timing): a per-uid
/// share, slots only root may use, and an idle timeout that only complete requests reset. Peers of other uids are
/// real: their sockets are connected from a thread running as that uid (`OtherUser`).
@Suite(.timeLimit(.minutes(2)))
struct ConnectionLimitsTests {
    static func limits(connections: Int, perUID: Int, reserved: Int) -> ServerLimits {
        var limits = ServerLimits()
        limits.maximumConnections = connections
        limits.maximumConnectionsPerUID = perUID
        limits.reservedConnections = reserved
        return limits
    }

    /// Whether the server admitted `connection`: it answers `hello`, or it sent `too_many_connections` and closed.
    static func isAdmitted(_ connection: LineConnection) async throws -> Bool {
        // A refused connection may already be closed: its refusal is still there to read.
        _ = try? connection.send(#"{"id":1,"method":"hello"}"#)
        let answer = try await connection.readObject()
        if answer["result"] != nil { return true }
        #expect(answer["error"]?["code"] == "too_many_connections")
        #expect(try await connection.readLine() == nil, "a refused connection is closed")
        return false
    }

    /// Waits (hang guard: a minute) until the server counts `count` connections: released ones are counted until
    /// their task has noticed the close.
    static func waitForConnections(_ server: InProcessServer, _ count: Int) async throws {
        try await eventually { server.tracker.count == count }
    }

    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func oneUIDGetsAtMostItsShare() async throws {
        try await InProcessServer.with(limits: Self.limits(connections: 10, perUID: 3, reserved: 2)) { server in
            var mine: [LineConnection] = []
            for _ in 0..<3 {
                let connection = try await server.connect(asUID: 4001)
                #expect(try await Self.isAdmitted(connection))
                mine.append(connection)
            }
            let fourth = try await server.connect(asUID: 4001)
            let refusal = try await fourth.readObject()
            #expect(refusal["error"]?["code"] == "too_many_connections")
            #expect(refusal["error"]?["message"]?.stringValue?.contains("max_connections_per_uid") == true)
            #expect(try await fourth.readLine() == nil)
            // Other users are not affected by 4001's crowd.
            let other = try await server.connect(asUID: 4002)
            #expect(try await Self.isAdmitted(other))
            // A connection 4001 closes gives its slot back.
            mine.removeLast().close()
            try await Self.waitForConnections(server, 3)
            let again = try await server.connect(asUID: 4001)
            #expect(try await Self.isAdmitted(again))
            // Two of 4001's, the new one, 4002's, and root's own.
            let root = try server.connect()
            #expect(try await root.result("status")["connections"] == 5)
            #expect(mine.count == 2)
            #expect(try await Self.isAdmitted(other))
        }
    }

    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func rootAndTheDaemonsUIDKeepSlotsNobodyElseCanTake() async throws {
        try await InProcessServer.with(limits: Self.limits(connections: 4, perUID: 2, reserved: 2)) { server in
            // Two users fill the shared slots.
            var crowd: [LineConnection] = []
            for uid: UInt32 in [4001, 4001, 4002, 4002] {
                let connection = try await server.connect(asUID: uid)
                #expect(try await Self.isAdmitted(connection))
                crowd.append(connection)
            }
            #expect(try await !Self.isAdmitted(try await server.connect(asUID: 4003)))
            // Root still gets in, into the reserved slots, and can work.
            let root = try server.connect()
            #expect(try await Self.isAdmitted(root))
            #expect(try await root.result("status")["connections"] == 5)
            let secondRoot = try server.connect()
            #expect(try await Self.isAdmitted(secondRoot))
            // The reserved slots are a bound too.
            #expect(try await !Self.isAdmitted(try server.connect()))
            #expect(crowd.count == 4)
        }
    }

    @Test func refusalsAreLoggedAtMostOncePerIntervalAndUID() {
        let tracker = ConnectionTracker()
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
        #expect(tracker.shouldLogRefusal(of: 4001, now: start) == (true, 0))
        for offset in 1...1000 {
            #expect(tracker.shouldLogRefusal(of: 4001, now: start + .milliseconds(Int64(offset))) == (false, 0))
        }
        // Another uid has its own line.
        #expect(tracker.shouldLogRefusal(of: 4002, now: start + .seconds(1)) == (true, 0))
        // After the interval, one line that says how many went unlogged.
        #expect(tracker.shouldLogRefusal(of: 4001, now: start + .seconds(11)) == (true, 1000))
        #expect(tracker.shouldLogRefusal(of: 4001, now: start + .seconds(12)) == (false, 0))
    }

    /// A short idle timeout, so that the test waits little; what it checks is what the server does, not how long
    /// it took (the hang guard is a minute). Not shorter: a connection's first request must reach the server within
    /// it, however loaded the machine.
    static var shortIdleTimeout: ServerLimits {
        var limits = ServerLimits()
        limits.idleTimeout = .seconds(1)
        return limits
    }

    /// Sends `chunk` every few milliseconds until the server closes the connection (true) or a minute passes.
    static func trickle(_ chunk: [UInt8], on connection: LineConnection) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            guard (try? connection.send(raw: chunk)) != nil else { return true }
            do {
                guard try connection.pollObject() == nil else { continue }
            } catch {
                return true  // closed
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test func bytesThatCompleteNoRequestDoNotKeepAConnectionAlive() async throws {
        try await InProcessServer.with(limits: Self.shortIdleTimeout) { server in
            // A peer that sends one byte at a time of a line it never finishes.
            // (Its start goes as the trickle does: on a machine slow enough that the idle timeout has already closed
            // the connection, that send fails, and the connection was closed, which is what is checked.)
            let trickler = try await LineConnection.established({ try server.connect() }, "hello")
            let closedAtOnce = (try? trickler.send(raw: Array(#"{"id":1,"method":"hel"#.utf8))) == nil
            var closed = closedAtOnce
            if !closed { closed = try await Self.trickle([UInt8(ascii: " ")], on: trickler) }
            #expect(closed, "still open after a minute")
            // Empty lines are not requests either.
            let blank = try server.connect()
            #expect(try await Self.trickle([UInt8(ascii: "\n")], on: blank), "still open after a minute")
        }
    }

    @Test func subscribersAreNotIdle() async throws {
        try await InProcessServer.with(limits: Self.shortIdleTimeout) { server in
            let subscriber = try await LineConnection.established({ try server.connect() }, "subscribe")
            let idle = try await LineConnection.established({ try server.connect() }, "hello")
            #expect(try await idle.readLine() == nil)
            // The subscriber outlived the idle connection and still gets events.
            _ = try await LineConnection.established(
                { try server.connect() },
                "login",
                ["credentials": ["type": "anonymous"]]
            )
            #expect(try await subscriber.nextEvent()["event"] == "user_logged_in")
        }
    }
}
