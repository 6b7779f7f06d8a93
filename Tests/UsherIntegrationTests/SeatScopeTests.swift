import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// A rule limited to one seat, tried by its peer (a second uid) against every method: users active on its seat, on
/// other seats and on none. The rule is the one of the rear screens of a car: they never get the driver's token.
@Suite(.integrationHangGuard)
struct SeatScopeTests {
    static let config = """
        [seats]
        names = ["driver", "rear-left", "rear-right"]
        default = "driver"

        [[access.rule]]
        uid = 65534
        allow = ["read", "token", "manage"]
        seats = ["rear-left"]

        """

    /// One request of the seat-scoped peer, with a name that says what it tries.
    struct Attempt: CustomStringConvertible {
        var description: String
        var method: String
        var params: [String: JSONValue]
    }

    /// The device: Dan active on the driver's seat, Rhea on rear-left, Ria on rear-right, Nora logged in and active
    /// nowhere. Returns their ids by name.
    static func seatUsers(_ root: LineConnection) async throws -> [String: String] {
        var ids: [String: String] = [:]
        for (name, seat) in [("nora", "driver"), ("dan", "driver"), ("rhea", "rear-left"), ("ria", "rear-right")] {
            try await SeatsIntegrationTests.register(root, "\(name)@example.com")
            let login = try await root.result("login", SeatsIntegrationTests.login("\(name)@example.com", seat: seat))
            ids[name] = try #require(login["user"]?["id"]?.stringValue)
        }
        _ = try await root.result("create_api_key", ["name": "laptop", "user_id": .string(ids["dan"]!)])
        return ids
    }

    static func refused(_ ids: [String: String]) -> [Attempt] {
        let dan = JSONValue.string(ids["dan"]!)
        let nora = JSONValue.string(ids["nora"]!)
        let ria = JSONValue.string(ids["ria"]!)
        let rhea = JSONValue.string(ids["rhea"]!)
        let lease: [String: JSONValue] = ["mode": "block", "who": "t", "why": "t"]
        return [
            Attempt(description: "current_user of the default seat", method: "current_user", params: [:]),
            Attempt(description: "current_user of driver", method: "current_user", params: ["seat": "driver"]),
            Attempt(
                description: "the driver's token by naming rear-left",
                method: "access_token",
                params: ["user_id": dan, "seat": "rear-left"]
            ),
            Attempt(description: "driver's token by seat", method: "access_token", params: ["seat": "driver"]),
            Attempt(description: "token of a user on no seat", method: "access_token", params: ["user_id": nora]),
            Attempt(
                description: "token of a user on no seat, naming rear-left",
                method: "access_token",
                params: ["user_id": nora, "seat": "rear-left"]
            ),
            Attempt(
                description: "refresh the driver",
                method: "refresh",
                params: ["user_id": dan, "seat": "rear-left"]
            ),
            Attempt(
                description: "an API key for the driver",
                method: "create_api_key",
                params: ["user_id": dan, "name": "x", "seat": "rear-left"]
            ),
            Attempt(
                description: "the driver's API keys",
                method: "list_api_keys",
                params: ["user_id": dan, "seat": "rear-left"]
            ),
            Attempt(
                description: "delete the driver's API key",
                method: "delete_api_key",
                params: ["user_id": dan, "name": "laptop", "seat": "rear-left"]
            ),
            Attempt(
                description: "move the driver to rear-left",
                method: "switch_user",
                params: ["user_id": dan, "seat": "rear-left", "move": true]
            ),
            Attempt(
                description: "switch the driver's seat",
                method: "switch_user",
                params: ["user_id": nora, "seat": "driver"]
            ),
            Attempt(
                description: "log the driver in onto rear-left with move",
                method: "login",
                params: SeatsIntegrationTests.login("dan@example.com", seat: "rear-left", move: true)
            ),
            Attempt(
                description: "log in onto the driver's seat",
                method: "login",
                params: SeatsIntegrationTests.login("nora@example.com", seat: "driver")
            ),
            Attempt(
                description: "log the driver out",
                method: "logout",
                params: ["user_id": dan, "seat": "rear-left"]
            ),
            Attempt(
                description: "log rear-right out",
                method: "logout",
                params: ["user_id": ria, "seat": "rear-left"]
            ),
            Attempt(
                description: "log out a user on no seat",
                method: "logout",
                params: ["user_id": nora, "seat": "rear-left"]
            ),
            Attempt(
                description: "remove the driver",
                method: "remove_user",
                params: ["user_id": dan, "seat": "rear-left"]
            ),
            Attempt(
                description: "remove its own seat's user (account-wide)",
                method: "remove_user",
                params: ["user_id": rhea, "seat": "rear-left"]
            ),
            Attempt(
                description: "the driver's identities by seat",
                method: "list_identities",
                params: ["seat": "driver"]
            ),
            Attempt(description: "the default seat's identities", method: "list_identities", params: [:]),
            Attempt(description: "the driver's identities by id", method: "list_identities", params: ["user_id": dan]),
            Attempt(
                description: "the identities of a user on no seat",
                method: "list_identities",
                params: ["user_id": nora]
            ),
            Attempt(description: "list every user", method: "list_users", params: ["seat": "rear-left"]),
            Attempt(description: "list every seat", method: "list_seats", params: ["seat": "rear-left"]),
            Attempt(description: "the daemon's status", method: "status", params: ["seat": "rear-left"]),
            Attempt(description: "every lease", method: "list_leases", params: ["seat": "rear-left"]),
            Attempt(
                description: "a lease on the driver's seat",
                method: "inhibit",
                params: lease.merging(["seat": "driver"]) { $1 }
            ),
            Attempt(
                description: "events of driver too",
                method: "subscribe",
                params: ["seats": ["rear-left", "driver"]]
            ),
        ]
    }

    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func aSeatScopedPeerReachesItsSeatAndNothingElse() async throws {
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(Self.config)) { daemon in
            try await daemon.start()
            let root = try daemon.connect()
            root.timeout = .seconds(120)
            let ids = try await Self.seatUsers(root)
            let rear = try await OtherUser.connect(path: daemon.socketPath)
            rear.timeout = .seconds(120)

            for attempt in Self.refused(ids) {
                let response = try await rear.call(attempt.method, attempt.params)
                #expect(
                    response["error"]?["code"] == "permission_denied",
                    "\(attempt): \(response)"
                )
            }
            // Nothing changed: every user where it was, the driver's key still there.
            #expect(try await root.result("current_user")["user"]?["id"]?.stringValue == ids["dan"])
            #expect(
                try await root.result("current_user", ["seat": "rear-left"])["user"]?["id"]?.stringValue == ids["rhea"]
            )
            #expect(
                try await root.result("current_user", ["seat": "rear-right"])["user"]?["id"]?.stringValue == ids["ria"]
            )
            let keys = try await root.result("list_api_keys", ["user_id": .string(ids["dan"]!)])
            #expect(keys["api_keys"]?.arrayValue?.count == 1)
            #expect(try await root.result("list_leases")["leases"]?.arrayValue?.isEmpty == true)

            // What it may do: its own seat, and what is about no seat or user.
            #expect(
                try await rear.result("hello", ["seat": "rear-left"])["permissions"] == ["read", "token", "manage"]
            )
            #expect(try await rear.result("hello")["permissions"] == [])
            _ = try await rear.result("providers")
            _ = try await rear.result("jwks")
            #expect(
                try await rear.result("current_user", ["seat": "rear-left"])["user"]?["id"]?.stringValue == ids["rhea"]
            )
            #expect(try await rear.result("access_token", ["seat": "rear-left"])["user_id"]?.stringValue == ids["rhea"])
            #expect(
                try await rear.result("list_identities", ["seat": "rear-left"])["user_id"]?.stringValue == ids["rhea"]
            )
            #expect(try await rear.result("list_identities", ["user_id": .string(ids["rhea"]!)])["user_id"] != nil)
            #expect(try await rear.result("access_token", ["user_id": .string(ids["rhea"]!)])["user_id"] != nil)
            _ = try await rear.result("refresh", ["seat": "rear-left"])
            let lease = try await rear.result(
                "inhibit",
                ["seat": "rear-left", "mode": "delay", "who": "t", "why": "t"]
            )
            _ = try await rear.result("release", ["lease": lease["lease"]!])
            // A user active nowhere may be made active on its seat (documented), and its seat's user logged out.
            _ = try await rear.result("switch_user", ["user_id": .string(ids["nora"]!), "seat": "rear-left"])
            _ = try await rear.result("logout", ["seat": "rear-left"])
        }
    }

    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func aSeatScopedReaderSubscribesToItsSeatAndGetsOnlyItsEvents() async throws {
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(Self.config)) { daemon in
            try await daemon.start()
            let root = try daemon.connect()
            root.timeout = .seconds(120)
            let ids = try await Self.seatUsers(root)
            let watcher = try await OtherUser.connect(path: daemon.socketPath)
            watcher.timeout = .seconds(120)
            let subscribed = try await watcher.result("subscribe", ["seats": ["rear-left"]])
            #expect(subscribed["generation"] != nil)
            // Without `seats`, it subscribes to the seats its rule names (here the same one).
            let everything = try await OtherUser.connect(path: daemon.socketPath)
            everything.timeout = .seconds(120)
            _ = try await everything.result("subscribe")

            // Events about other seats and about users reach it not; its own seat's do, first.
            _ = try await root.result("logout", ["seat": "rear-right"])
            // Nora (active nowhere) took rear-right over; she moves to the driver's seat, which changes both.
            _ = try await root.result(
                "switch_user",
                ["user_id": .string(ids["nora"]!), "seat": "driver", "move": true]
            )
            // Dan took rear-right over in turn (the successor rule); he moves to rear-left.
            _ = try await root.result(
                "switch_user",
                ["user_id": .string(ids["dan"]!), "seat": "rear-left", "move": true]
            )
            for connection in [watcher, everything] {
                let event = try await connection.nextEvent()
                #expect(event["event"] == "active_user_changed")
                #expect(event["data"]?["seat"] == "rear-left")
                #expect(event["data"]?["user_id"]?.stringValue == ids["dan"])
            }
            // Still subscribed: the next change of its seat arrives too.
            _ = try await root.result("logout", ["seat": "rear-left"])
            let next = try await watcher.nextEvent()
            #expect(next["event"] == "active_user_changed")
            #expect(next["data"]?["seat"] == "rear-left")
        }
    }
}
