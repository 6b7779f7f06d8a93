import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `[limits]` and hostile input on the real daemon: nothing crashes it, stalls other clients or changes state.
@Suite(.integrationHangGuard)
struct LimitsTests {
    /// A connection the daemon admitted (answered `hello` on). Until the daemon has noticed connections that just
    /// closed (such as the start-up probe), it may still refuse one, and close it under our feet.
    static func admitted(to daemon: DaemonProcess) async throws -> LineConnection {
        var admitted: LineConnection?
        try await eventually {
            let connection = try daemon.connect()
            if (try? connection.send(#"{"id":0,"method":"hello"}"#)) != nil,
                (try? await connection.readObject())?["result"] != nil
            {
                admitted = connection
            }
            return admitted != nil
        }
        return try #require(admitted)
    }

    @Test func connectionsBeyondTheLimitAreRefusedAndClosedOnesReleasedAtOnce() async throws {
        // The tests run as root, who may use the reserved slots too: 5 + 1 connections in all.
        try await DaemonProcess.with(config: "[limits]\nmax_connections = 5\nreserved_connections = 1\n") { daemon in
            var open: [LineConnection] = []
            for _ in 0..<6 { open.append(try await Self.admitted(to: daemon)) }
            let extra = try daemon.connect()
            let refusal = try await extra.readObject()
            #expect(refusal["error"]?["code"] == "too_many_connections")
            #expect(try await extra.readLine() == nil)
            // Peers that close are released at once: new connections fit in again.
            open.removeLast().close()
            open.removeLast().close()
            open.append(try await Self.admitted(to: daemon))
            open.append(try await Self.admitted(to: daemon))
            #expect(try await open[0].result("status")["connections"] == 6)
            let another = try daemon.connect()
            #expect(try await another.readObject()["error"]?["code"] == "too_many_connections")
        }
    }

    @Test func idleConnectionsAreClosedButSubscribersStay() async throws {
        try await DaemonProcess.with(config: "[limits]\nidle_timeout = \"1s\"\n") { daemon in
            let subscriber = try await LineConnection.established({ try daemon.connect() }, "subscribe")
            let idle = try await LineConnection.established({ try daemon.connect() }, "hello")
            // What is checked is that the daemon closes it; the minute is only a hang guard.
            #expect(try await idle.readLine() == nil)
            // The subscriber is still there and still gets events.
            _ = try await LineConnection.established(
                { try daemon.connect() },
                "login",
                ["credentials": ["type": "anonymous"]]
            )
            #expect(try await subscriber.nextEvent()["event"] == "user_logged_in")
            #expect(try await subscriber.result("hello")["server"] == "usherd")
        }
    }

    @Test func aSubscriberThatStopsReadingIsDisconnected() async throws {
        try await DaemonProcess.with(config: "[limits]\nmax_pending_bytes = 8192\n") { daemon in
            let slow = try daemon.connect()
            slow.shrinkReceiveBuffer()
            _ = try await slow.result("subscribe")
            let client = try daemon.connect()
            // Each round produces four events; the slow subscriber reads none of them.
            var disconnected = false
            for _ in 0..<400 where !disconnected {
                _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
                _ = try await client.result("logout")
                disconnected = daemon.log.contains("subscriber stopped reading")
            }
            #expect(disconnected)
            // Everything it had been sent ends with the connection closing.
            slow.timeout = hangGuard
            while try await slow.readLine() != nil {}
            // Other clients never noticed, and the slow one is released.
            try await eventually {
                try await client.result("status")["connections"]?.intValue == 1
            }
        }
    }

    @Test func hostileInputNeverCrashesStallsOrChangesState() async throws {
        try await DaemonProcess.with { daemon in
            let bystander = try daemon.connect()
            _ = try await bystander.result("login", ["credentials": ["type": "anonymous"]])
            let before = try await bystander.result("list_users")

            // A 100 MB line: refused after the limit, without reading it all into memory.
            let flood = try daemon.connect()
            let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20)
            var sent = 0
            while sent < 100, (try? flood.send(raw: chunk)) != nil { sent += 1 }
            #expect(sent < 100, "the daemon should have stopped reading long before 100 MB")
            #expect(try await flood.readObject()["error"]?["code"] == "line_too_long")

            // Numbers out of range, wrong types, duplicate keys, deep nesting, NUL and invalid UTF-8.
            let garbage = try daemon.connect()
            let lines: [[UInt8]] = [
                Array(#"{"id":1,"method":"access_token","params":{"min_valid":1e999}}"#.utf8),
                Array(#"{"id":2,"method":"access_token","params":{"min_valid":99999999999999999999999}}"#.utf8),
                Array(#"{"id":3,"method":"switch_user","params":{"user_id":["x"]}}"#.utf8),
                Array(#"{"id":4,"method":"hello","method":"remove_user","params":{"user_id":"x"}}"#.utf8),
                Array((String(repeating: "[", count: 30_000)).utf8),
                [0x7B, 0x00, 0x7D],
                [0xC3, 0x28, 0xA0, 0xA1],
            ]
            for line in lines {
                try garbage.send(raw: line + [10])
                let response = try await garbage.readObject()
                #expect(response["error"] != nil || response["result"] != nil)
            }
            // Half a line, then gone.
            let half = try daemon.connect()
            try half.send(raw: Array(#"{"id":1,"method":"logo"#.utf8))
            half.close()
            // Thousands of connections opened and dropped.
            for _ in 0..<2000 {
                try daemon.connect().close()
            }
            // The daemon is alive, answers at once, and nothing changed.
            #expect(try await bystander.result("list_users") == before)
            try await eventually {
                try await bystander.result("status")["connections"]?.intValue == 2
            }  // the bystander and the garbage connection
            #expect(try await garbage.result("hello")["server"] == "usherd")
        }
    }
}
