import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Leases end to end: each connection is a program holding a lease, or one trying to switch.
@Suite(.integrationHangGuard)
struct LeasesIntegrationTests {
    /// A daemon with two users logged in, Bob active; returns Ada's and Bob's ids.
    static func twoUsers(_ client: LineConnection) async throws -> (ada: String, bob: String) {
        var ids: [String] = []
        for email in ["ada@example.com", "bob@example.com"] {
            _ = try await client.result("register", ["email": .string(email), "password": "secret123"])
            let login = try await client.result(
                "login",
                ["credentials": ["type": "email_password", "email": .string(email), "password": "secret123"]]
            )
            ids.append(try #require(login["user"]?["id"]?.stringValue))
        }
        return (ids[0], ids[1])
    }

    @Test func blockRefusesForceOverridesAndTheLeaseDiesWithItsConnection() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let holder = try daemon.connect()
            let (ada, bob) = try await Self.twoUsers(client)
            let lease = try await holder.result(
                "inhibit",
                ["mode": "block", "who": "pay", "why": "card payment"]
            )
            let leaseID = try #require(lease["lease"]?.stringValue)
            #expect(leaseID.hasPrefix("l_"))

            let refused = try await client.call("switch_user", ["user_id": .string(ada)])
            #expect(refused["error"]?["code"] == "inhibited")
            let holders = try #require(refused["error"]?["data"]?["holders"]?.arrayValue)
            #expect(holders.map { $0["lease"]?.stringValue } == [leaseID])
            #expect(holders.first?["why"] == "card payment")
            #expect(holders.first?["pid"]?.intValue == Int64(getpid()))
            #expect(try await client.errorCode("logout") == "inhibited")
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == bob)
            let leases = try #require(try await client.result("list_leases")["leases"]?.arrayValue)
            #expect(leases.map { $0["who"] } == ["pay"])

            let forced = try await client.result("switch_user", ["user_id": .string(ada), "force": true])
            #expect(forced["user"]?["id"]?.stringValue == ada)
            let broken = try await holder.nextEvent()
            #expect(broken["event"] == "lease_broken")
            #expect(broken["data"]?["lease"]?.stringValue == leaseID)
            #expect(broken["data"]?["reason"] == "forced")
            #expect(daemon.log.contains("forced"))

            // The holder goes away: so does its lease, and switches go through again.
            holder.close()
            try await eventually {
                try await client.result("list_leases")["leases"]?.arrayValue?.isEmpty == true
            }
            _ = try await client.result("switch_user", ["user_id": .string(bob)])
        }
    }

    @Test func delayWaitsForTheHolderToRelease() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let holder = try daemon.connect()
            let (ada, bob) = try await Self.twoUsers(client)
            let lease = try await holder.result("inhibit", ["mode": "delay", "who": "sync", "why": "upload"])

            try client.send(#"{"id":"sw","method":"switch_user","params":{"user_id":"\#(ada)"}}"#)
            let pending = try await holder.nextEvent()
            #expect(pending["event"] == "switch_pending")
            #expect(pending["data"]?["previous_user_id"]?.stringValue == bob)
            #expect(pending["data"]?["user_id"]?.stringValue == ada)
            #expect(pending["data"]?["deadline"]?.stringValue != nil)
            // Meanwhile reads go on, and see the change has not happened.
            #expect(try await holder.result("current_user")["user"]?["id"]?.stringValue == bob)

            _ = try await holder.result("release", ["lease": lease["lease"] ?? .null])
            let answer = try await client.readObject()
            #expect(answer["id"] == "sw")
            #expect(answer["result"]?["user"]?["id"]?.stringValue == ada)
            #expect(try await client.errorCode("release", ["lease": lease["lease"] ?? .null]) == "lease_not_found")
        }
    }

    @Test func aDelayLeaseHoldsAChangeBackForMaxDelayAtMost() async throws {
        try await DaemonProcess.with(config: "[leases]\nmax_delay = \"1s\"\n") { daemon in
            let client = try daemon.connect()
            let holder = try daemon.connect()
            let (ada, _) = try await Self.twoUsers(client)
            _ = try await holder.result("inhibit", ["mode": "delay", "who": "sync", "why": "never releases"])
            // The holder never releases: the switch is answered once max_delay has passed, not before it is asked.
            let switched = try await client.result("switch_user", ["user_id": .string(ada)])
            #expect(switched["user"]?["id"]?.stringValue == ada)
            #expect(try await holder.nextEvent()["event"] == "switch_pending")
        }
    }

    /// A lease holder's own event (here `switch_pending`) never lands inside a long answer the daemon is still
    /// writing to it: the holder stops reading in the middle of a `list_users` of several megabytes, a switch is asked
    /// meanwhile, and the holder then reads the whole answer, intact, and the event after it.
    @Test func aHoldersEventWaitsForTheAnswerBeingStreamedToIt() async throws {
        let daemon = try DaemonProcess(config: "[leases]\nmax_delay = \"1s\"\n")
        try await ProtocolTests.seedUsers(ProtocolTests.manyUsers, into: daemon.stateDirectory)
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let client = try daemon.connect()
            let holder = try daemon.connect()
            holder.timeout = .seconds(60)
            let (ada, _) = try await Self.twoUsers(client)
            _ = try await holder.result("inhibit", ["mode": "delay", "who": "sync", "why": "upload"])
            // Many times what the socket buffers hold: once its first bytes are here, the daemon is still writing it
            // (the holder reads nothing yet) while the switch is asked.
            try holder.send(raw: Array("{\"id\":7,\"method\":\"list_users\"}\n".utf8))
            try await holder.waitUntilReadable()
            // Answered after max_delay; the holder was sent `switch_pending` as soon as the switch was asked.
            _ = try await client.result("switch_user", ["user_id": .string(ada)])

            let answer = try JSONDecoder().decode(
                JSONValue.self,
                from: Data(try #require(try await holder.readLine()).utf8)
            )
            #expect(answer["id"] == 7)
            #expect(answer["result"]?["users"]?.arrayValue?.count == ProtocolTests.manyUsers + 2)
            let event = try JSONDecoder().decode(
                JSONValue.self,
                from: Data(try #require(try await holder.readLine()).utf8)
            )
            #expect(event["event"] == "switch_pending")
        }
    }
}
