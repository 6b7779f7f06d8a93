import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherServer
import UsherTestSupport

/// The seat of a request that names none is its caller's (logind's, through an injected resolver here), asked once
/// when the connection is accepted; a caller without one gets the default seat.
@Suite(.timeLimit(.minutes(2)))
struct SeatResolutionTests {
    @Test func aConnectionsSeatIsItsCallersAskedOnce() async throws {
        let asked = Mutex(0)
        // The first connection's peer sits on seat1 (as a logind session would say); later ones are in no seat.
        let resolver: @Sendable (PeerCredentials) -> String? = { _ in
            asked.withLock { count in
                count += 1
                return count == 1 ? "seat1" : nil
            }
        }
        let seats = SeatConfiguration(source: .logind, names: ["seat1"])
        try await InProcessServer.with(seats: seats, seatOfPeer: resolver) { server in
            // One after the other, so that the first one accepted is the first one connected.
            let onSeat1 = try server.connect()
            #expect(try await onSeat1.result("current_user")["seat"] == "seat1")
            let seatless = try server.connect()
            #expect(try await seatless.result("current_user")["seat"] == "seat0")

            // A login from the seat1 caller makes the user active there, not on the default seat.
            let login = try await onSeat1.result("login", ["credentials": ["type": "anonymous"]])
            #expect(login["seat"] == "seat1")
            #expect(try await onSeat1.result("current_user")["user"]?["id"] == login["user"]?["id"])
            #expect(try await seatless.result("current_user")["user"] == .null)
            #expect(try await onSeat1.result("access_token")["user_id"] == login["user"]?["id"])
            #expect(try await seatless.errorCode("access_token") == "no_active_user")
            // A request that names a seat is about that seat, whoever sends it.
            #expect(try await seatless.result("current_user", ["seat": "seat1"])["user"]?["id"] == login["user"]?["id"])
            #expect(asked.withLock { $0 } == 2, "once per connection, not per request")
        }
    }

    @Test func aSeatLogindReportsFirstThroughAConnectionIsKnownFromThen() async throws {
        let seats = SeatConfiguration(source: .logind)
        let resolver: @Sendable (PeerCredentials) -> String? = { _ in "seat7" }
        try await InProcessServer.with(seats: seats, seatOfPeer: resolver) { server in
            let client = try server.connect()
            let login = try await client.result("login", ["credentials": ["type": "anonymous"]])
            #expect(login["seat"] == "seat7")
            let listed = try #require(try await client.result("list_seats")["seats"]?.arrayValue)
            #expect(listed.first { $0["name"] == "seat7" }?["source"] == "logind")
        }
    }
}
