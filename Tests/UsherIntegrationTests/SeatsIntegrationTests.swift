import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Seats declared in the configuration, end to end: the real daemon, real sockets.
@Suite(.integrationHangGuard)
struct SeatsIntegrationTests {
    static let car = """
        [seats]
        source = "config"
        names = ["driver", "rear"]
        default = "driver"

        """

    static func login(_ email: String, seat: String? = nil, move: Bool = false) -> [String: JSONValue] {
        var params: [String: JSONValue] = [
            "credentials": ["type": "email_password", "email": .string(email), "password": "secret123"]
        ]
        if let seat { params["seat"] = .string(seat) }
        if move { params["move"] = true }
        return params
    }

    static func register(_ connection: LineConnection, _ emails: String...) async throws {
        for email in emails {
            _ = try await connection.result("register", ["email": .string(email), "password": "secret123"])
        }
    }

    @Test func twoSeatsTheirOwnActiveUsersAndEvents() async throws {
        try await DaemonProcess.with(config: Self.car) { daemon in
            let client = try daemon.connect()
            let rearWatcher = try daemon.connect()
            try await Self.register(client, "ada@example.com", "bob@example.com", "cy@example.com")
            let subscribed = try await rearWatcher.result("subscribe", ["seats": ["rear"]])
            #expect(subscribed["subscribed"]?.arrayValue?.contains("seat_added") == true)

            let ada = try await client.result("login", Self.login("ada@example.com"))
            #expect(ada["seat"] == "driver")
            let adaID = try #require(ada["user"]?["id"]?.stringValue)
            let bob = try await client.result("login", Self.login("bob@example.com", seat: "rear"))
            #expect(bob["seat"] == "rear")
            let bobID = try #require(bob["user"]?["id"]?.stringValue)

            // Each seat answers with its own user; a request without a seat is about the default seat.
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == adaID)
            #expect(try await client.result("current_user")["seat"] == "driver")
            let rear = try await client.result("current_user", ["seat": "rear"])
            #expect(rear["user"]?["id"]?.stringValue == bobID)
            #expect(rear["seat"] == "rear")
            #expect(try await client.result("access_token", ["seat": "rear"])["user_id"]?.stringValue == bobID)
            #expect(try await client.errorCode("current_user", ["seat": "trunk"]) == "seat_not_found")

            let seats = try #require(try await client.result("list_seats")["seats"]?.arrayValue)
            #expect(seats.map { $0["name"] } == ["driver", "rear"])
            #expect(seats.map { $0["user_id"]?.stringValue } == [adaID, bobID])
            #expect(seats.map { $0["present"] } == [true, true])

            // Ada is active on the driver's seat: she cannot be made active on the rear one without `move`.
            let refused = try await client.call("switch_user", ["user_id": .string(adaID), "seat": "rear"])
            #expect(refused["error"]?["code"] == "user_active_elsewhere")
            #expect(refused["error"]?["data"]?["seat"] == "driver")

            // Cy logs in on the driver's seat, Ada takes it back, then moves to the rear seat: the driver's seat goes to
            // its successor, Cy (more recently active than Bob, whom Ada's move leaves without a seat).
            let cy = try await client.result("login", Self.login("cy@example.com"))
            _ = try await client.result("switch_user", ["user_id": .string(adaID)])
            _ = try await client.result("switch_user", ["user_id": .string(adaID), "seat": "rear", "move": true])
            // The rear watcher saw exactly the rear seat's two changes, Bob's login and Ada's move, and none of the
            // driver's seat's.
            var changes: [[String: JSONValue]] = []
            while changes.count < 2 {
                let event = try await rearWatcher.nextEvent()
                if event["event"] == "active_user_changed" { changes.append(event) }
            }
            #expect(changes.map { $0["data"]?["seat"] } == ["rear", "rear"])
            #expect(changes.map { $0["data"]?["previous_user_id"]?.stringValue } == [nil, bobID])
            #expect(changes.map { $0["data"]?["user_id"]?.stringValue } == [bobID, adaID])
            #expect(try await client.result("current_user")["user"]?["id"] == cy["user"]?["id"])
        }
    }

    @Test func aRestartKeepsEverySeatsActiveUser() async throws {
        try await DaemonProcess.with(config: Self.car) { daemon in
            let client = try daemon.connect()
            try await Self.register(client, "ada@example.com", "bob@example.com", "cy@example.com")
            let ada = try await client.result("login", Self.login("ada@example.com", seat: "driver"))
            let bob = try await client.result("login", Self.login("bob@example.com", seat: "rear"))
            // Cy, the most recently active, takes the rear seat and gives it back: the rear seat is Bob's again.
            _ = try await client.result("login", Self.login("cy@example.com", seat: "rear"))
            _ = try await client.result("switch_user", ["user_id": bob["user"]?["id"] ?? .null, "seat": "rear"])
            try await daemon.restart()
            let again = try daemon.connect()
            #expect(try await again.result("current_user")["user"]?["id"] == ada["user"]?["id"])
            #expect(try await again.result("current_user", ["seat": "rear"])["user"]?["id"] == bob["user"]?["id"])
        }
    }

    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func aSeatScopedRuleGrantsOnlyForItsSeats() async throws {
        let rule = """
            [[access.rule]]
            uid = 65534
            allow = ["read", "token"]
            seats = ["rear"]

            """
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon(Self.car + rule)) { daemon in
            try await daemon.start()
            let answers = try await AccessPolicyTests.asNobody(
                daemon,
                [
                    #"{"id":1,"method":"current_user","params":{"seat":"rear"}}"#,
                    #"{"id":2,"method":"current_user","params":{"seat":"driver"}}"#,
                    #"{"id":3,"method":"current_user"}"#,
                    #"{"id":4,"method":"inhibit","params":{"seat":"rear","mode":"block","who":"t","why":"t"}}"#,
                    #"{"id":5,"method":"inhibit","params":{"seat":"driver","mode":"block","who":"t","why":"t"}}"#,
                ]
            )
            #expect(
                answers.map { $0["error"]?["code"] } == [
                    nil, "permission_denied", "permission_denied", nil,
                    "permission_denied",
                ]
            )
            #expect(answers[0]["result"]?["seat"] == "rear")
        }
    }
}

extension SeatsIntegrationTests {
    /// With seats from logind, a caller in no logind session (the test runner) is about the default seat, and the
    /// daemon runs whether or not logind does here (the package boot test covers a caller in a session).
    @Test func seatsFromLogindFallBackToTheDefaultSeat() async throws {
        try await DaemonProcess.with(config: "[seats]\nsource = \"logind\"\n") { daemon in
            let client = try daemon.connect()
            let current = try await client.result("current_user")
            #expect(current["seat"] == "seat0")
            let login = try await client.result("login", ["credentials": ["type": "anonymous"]])
            #expect(login["seat"] == "seat0")
            let seats = try #require(try await client.result("list_seats")["seats"]?.arrayValue)
            #expect(seats.contains { $0["name"] == "seat0" && $0["user_id"] == login["user"]?["id"] })
            // logind writes a file per seat there while it runs (seat0 at least).
            if (try? FileManager.default.contentsOfDirectory(atPath: "/run/systemd/seats"))?.isEmpty == false {
                #expect(seats.contains { $0["name"] == "seat0" && $0["source"] == "logind" })
            } else {
                print("logind is not running here: its seats are not listed, only the default seat")
            }
        }
    }
}
