import Foundation
import Testing
import UsherProtocol
import UsherStore
import UsherTestSupport

/// Acknowledged means durable: state changes from several clients while the daemon is killed with SIGKILL at random
/// moments and restarted, again and again.
@Suite(.integrationHangGuard)
struct CrashSafetyTests {
    enum UserState: Equatable, CustomStringConvertible {
        case loggedIn, loggedOut, absent
        var description: String {
            switch self {
            case .loggedIn: "logged_in"
            case .loggedOut: "logged_out"
            case .absent: "absent"
            }
        }
    }

    /// A request sent and not yet answered: its outcome is uncertain if the daemon dies first.
    struct Pending {
        var email: String
        var target: UserState
        var id: Int64
    }

    @Test func everyAcknowledgedChangeSurvivesSIGKILL() async throws {
        // This test is about durability, so login throttling is off here: on a heavily loaded machine one of its
        // correct-password logins was refused twice with rate_limited (the peer's count reached the free failures),
        // a refusal not yet explained and tracked as an open defect; the throttle has tests of its own.
        try await DaemonProcess.with(config: "[login_throttle]\nenabled = false\n") { daemon in
            let accounts = (0..<6).map { "crash\($0)@example.com" }
            let setup = try daemon.connect()
            for email in accounts {
                _ = try await setup.result("register", ["email": .string(email), "password": "secret123"])
            }
            setup.close()
            // What the clients were told: per account, the last acknowledged state; and the targets of requests that
            // were in flight when the daemon died since then (each may or may not have been applied, never half).
            var acknowledged = Dictionary(uniqueKeysWithValues: accounts.map { ($0, UserState.absent) })
            var uncertain: [String: Set<UserState>] = [:]
            var ids: [String: String] = [:]
            var highestGeneration: Int64 = 0
            var acknowledgements = 0
            var generationsAfterRestart: [Int64] = []
            var nextID: Int64 = 0

            for _ in 0..<15 {
                // Three clients, each owning two accounts, each with at most one request in flight.
                let clients = try (0..<3).map { _ in try daemon.connect() }
                var pending: [Pending?] = [nil, nil, nil]
                // The kill comes at a random moment, but only once this round has had an acknowledgement, so that
                // a slow machine (logins hash passwords) still makes progress; a hard cap keeps a stuck daemon from
                // hanging the test.
                let killAt = ContinuousClock.now + .milliseconds(Int.random(in: 200...700))
                let giveUp = ContinuousClock.now + .seconds(20)
                let acknowledgedBefore = acknowledgements
                while ContinuousClock.now < giveUp,
                    ContinuousClock.now < killAt || acknowledgements == acknowledgedBefore
                {
                    for (index, client) in clients.enumerated() {
                        if pending[index] == nil {
                            let email = [accounts[index * 2], accounts[index * 2 + 1]].randomElement()!
                            // Settle an earlier crash's uncertainty the only way the daemon can reveal it cheaply:
                            // choose the operation from what was acknowledged; a removal that did happen shows as
                            // user_not_found below.
                            let current = acknowledged[email]!
                            var params: [String: JSONValue] = [:]
                            let method: String
                            let target: UserState
                            switch (current, Int.random(in: 0..<3)) {
                            case (.loggedIn, 0), (.loggedIn, 1):
                                (method, target) = ("logout", .loggedOut)
                                params["user_id"] = .string(ids[email]!)
                            case (.loggedIn, _), (.loggedOut, 2):
                                (method, target) = ("remove_user", .absent)
                                params["user_id"] = .string(ids[email]!)
                            default:
                                (method, target) = ("login", .loggedIn)
                                params = SessionRulesTests.emailLogin(email)
                            }
                            nextID += 1
                            let request: JSONValue = [
                                "id": .int(nextID), "method": .string(method), "params": .object(params),
                            ]
                            let encoder = JSONEncoder()
                            encoder.outputFormatting = .sortedKeys
                            try client.send(String(decoding: try encoder.encode(request), as: UTF8.self))
                            pending[index] = Pending(email: email, target: target, id: nextID)
                            uncertain[email, default: []].insert(target)
                        }
                        guard let waiting = pending[index], let response = try client.pollObject() else { continue }
                        #expect(response["id"] == .int(waiting.id))
                        pending[index] = nil
                        if let result = response["result"] {
                            acknowledged[waiting.email] = waiting.target
                            uncertain[waiting.email] = nil
                            acknowledgements += 1
                            if let userID = result["user"]?["id"]?.stringValue { ids[waiting.email] = userID }
                            if let generation = result["generation"]?.intValue {
                                highestGeneration = max(highestGeneration, generation)
                            }
                        } else if response["error"]?["code"] == "user_not_found", uncertain[waiting.email] != nil {
                            // A removal in flight at an earlier crash did happen.
                            acknowledged[waiting.email] = .absent
                            uncertain[waiting.email] = nil
                        } else {
                            Issue.record("unexpected answer: \(response)")
                        }
                    }
                    try await Task.sleep(for: .milliseconds(1))
                }
                try await daemon.kill9()
                try await daemon.start()
                let generation = try #require(try await daemon.connect().result("status")["generation"]?.intValue)
                // Nothing acknowledged before the crash is lost, and the generation never goes back.
                #expect(
                    generation >= highestGeneration,
                    "generation \(generation) after acknowledging \(highestGeneration)"
                )
                generationsAfterRestart.append(generation)
            }
            #expect(generationsAfterRestart == generationsAfterRestart.sorted(), "\(generationsAfterRestart)")
            #expect(acknowledgements >= 15, "only \(acknowledgements) changes were acknowledged")

            // The database itself is sound after all those crashes.
            try await daemon.kill9()
            let check = try await AppDatabase(path: "\(daemon.stateDirectory)/usher.sqlite").integrityCheck()
            #expect(check == "ok")
            try await daemon.start()

            // Every account is as the clients were told, or as a request in flight at a crash would have left it.
            let client = try daemon.connect()
            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            for email in accounts {
                let listed = users.first { $0["email"]?.stringValue == email }
                let actual: UserState =
                    switch listed?["state"]?.stringValue {
                    case "logged_in": .loggedIn
                    case "logged_out": .loggedOut
                    default: .absent
                    }
                #expect(
                    actual == acknowledged[email] || uncertain[email]?.contains(actual) == true,
                    "\(email): \(actual), acknowledged \(acknowledged[email]!), in flight \(String(describing: uncertain[email]))"
                )
                // Never half-present: a logged-in user has a token that works, a logged-out one has none.
                if let listed {
                    let hasToken = listed["access_token_expires_at"] != .null
                    #expect(hasToken == (actual == .loggedIn), "\(email) is \(actual) with token: \(hasToken)")
                    if actual == .loggedIn {
                        let token = try await client.result("access_token", ["user_id": listed["id"]!])
                        #expect(token["access_token"]?.stringValue?.isEmpty == false)
                    }
                }
            }
            let active = users.filter { $0["active"] == true }
            #expect(active.count == (users.contains { $0["state"] == "logged_in" } ? 1 : 0))
        }
    }
}

/// A refresh is one atomic change: killed at any point of a refresh, the daemon comes back with either the old tokens
/// and the old refresh grant or the new ones, so no user is ever logged out by a crash.
@Suite(.timeLimit(.minutes(6)))
struct RefreshCrashSafetyTests {
    /// One looping client: its user, and what the daemon acknowledged to it.
    struct Looper {
        var email: String
        var userID: String
        var connection: LineConnection?
        var inFlight = 0
        /// The `access_token_expires_at` of the last acknowledged refresh since the last restart.
        var lastExpiry: String?
    }

    @Test func aSIGKILLDuringRefreshesNeverLogsTheUserOut() async throws {
        try await DaemonProcess.with { daemon in
            // Answers wait behind password hashing and fsyncs on a loaded machine: a minute is a hang guard only.
            func connect() throws -> LineConnection {
                let connection = try daemon.connect()
                connection.timeout = .seconds(60)
                return connection
            }
            func logIn(_ email: String) async throws -> String {
                let login = try await connect().result("login", SessionRulesTests.emailLogin(email))
                return try #require(login["user"]?["id"]?.stringValue)
            }
            let setup = try connect()
            var loopers: [Looper] = []
            for index in 0..<3 {
                let email = "looper\(index)@example.com"
                _ = try await setup.result("register", ["email": .string(email), "password": "secret123"])
                loopers.append(Looper(email: email, userID: try await logIn(email)))
            }
            setup.close()

            let rounds = 25
            var lost = 0
            var acknowledged = 0
            var nextID: Int64 = 0
            for round in 0..<rounds {
                // Three clients loop refresh, each on its own user with 1 to 3 requests in flight, and the daemon is
                // killed right after a random number of answers: refreshes are under way at that moment, at whatever
                // step the machine's speed puts each of them. (Counting answers, not time, keeps the kill inside the
                // loop however fast or slow the machine is.)
                let killAfter = Int.random(in: 1...20)
                for index in loopers.indices {
                    loopers[index].connection = try connect()
                    loopers[index].inFlight = 0
                    loopers[index].lastExpiry = nil
                }
                func sendRefresh(_ index: Int) throws {
                    nextID += 1
                    let userID = loopers[index].userID
                    try loopers[index].connection?.send(
                        #"{"id":\#(nextID),"method":"refresh","params":{"user_id":"\#(userID)"}}"#
                    )
                    loopers[index].inFlight += 1
                }
                for index in loopers.indices {
                    for _ in 0..<Int.random(in: 1...3) { try sendRefresh(index) }
                }
                var answers = 0
                let giveUp = ContinuousClock.now + .seconds(60)
                answering: while answers < killAfter, ContinuousClock.now < giveUp {
                    for index in loopers.indices {
                        guard let answer = try loopers[index].connection?.pollObject() else { continue }
                        loopers[index].inFlight -= 1
                        guard let expiry = answer["result"]?["access_token_expires_at"]?.stringValue else {
                            Issue.record("round \(round): a refresh failed before the kill: \(answer)")
                            break answering
                        }
                        loopers[index].lastExpiry = expiry
                        acknowledged += 1
                        answers += 1
                        if answers == killAfter { break answering }
                        try sendRefresh(index)
                    }
                    try await Task.sleep(for: .milliseconds(1))
                }
                try await daemon.kill9()
                for index in loopers.indices { loopers[index].connection?.close() }
                try await daemon.start()

                let check = try connect()
                let users = try #require(try await check.result("list_users")["users"]?.arrayValue)
                for index in loopers.indices {
                    let looper = loopers[index]
                    // The last acknowledged refresh survived (timestamps of one format compare as strings)...
                    let listed = users.first { $0["id"]?.stringValue == looper.userID }
                    let stored = listed?["access_token_expires_at"]?.stringValue
                    if let lastExpiry = looper.lastExpiry {
                        #expect(
                            (stored ?? "") >= lastExpiry,
                            "round \(round): acknowledged expiry \(lastExpiry), stored \(String(describing: stored))"
                        )
                    }
                    // ... and so did the session: refresh works.
                    let answer = try await check.call("refresh", ["user_id": .string(looper.userID)])
                    if answer["result"] == nil {
                        lost += 1
                        print(
                            "round \(round): \(looper.email) lost its session (killed after \(killAfter) answers, "
                                + "\(looper.inFlight) in flight): \(answer["error"] ?? .null)"
                        )
                        loopers[index].userID = try await logIn(looper.email)
                    }
                }
                check.close()
            }
            let sessions = rounds * loopers.count
            print("refresh crash test: \(lost) of \(sessions) sessions lost, \(acknowledged) refreshes acknowledged")
            #expect(lost == 0, "\(lost) of \(sessions) sessions lost to a SIGKILL during refreshes")
            #expect(acknowledged >= rounds)

            // The database itself is sound after all those crashes.
            try await daemon.kill9()
            let check = try await AppDatabase(path: "\(daemon.stateDirectory)/usher.sqlite").integrityCheck()
            #expect(check == "ok")
        }
    }
}
