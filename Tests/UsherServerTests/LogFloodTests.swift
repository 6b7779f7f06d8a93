import Foundation
import Testing
import UsherProtocol
import UsherServer
import UsherTestSupport

/// What one uid can make the daemon log: lease churn and requests built so that no two records are alike write a
/// bounded number of records per second, counted in a summary, and another uid's records still get through. In-process,
/// with a test clock for the per-second bound (STYLE.md: limits never depend on the machine's speed).
@Suite(.integrationHangGuard)
struct LogFloodTests {
    static let flooder: UInt32 = 4301
    static let bystander: UInt32 = 4302
    static let limit = 10

    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func leaseChurnFromOneUIDIsBoundedPerSecondAndOthersGetThrough() async throws {
        let records = LogRecorder()
        let time = TestTime()
        let audit = AuditLog(now: time.source)
        let budget = PeerLogBudget(limit: { Self.limit }, logger: records.logger(), now: time.source)
        let rules = [Self.flooder, Self.bystander].map { AccessRule(.uid($0), allow: [.token]) }
        try await InProcessServer.with(rules: rules, logger: records.logger(), auditLog: audit, logBudget: budget) {
            server in
            let cycles = 150
            for cycle in 0..<cycles {
                let connection = try await server.connect(asUID: Self.flooder)
                let lease = try await connection.result(
                    "inhibit",
                    ["mode": "block", "who": .string("churn \(cycle)"), "why": "flood"]
                )
                #expect(lease["lease"]?.stringValue != nil)
                // A denied request naming a new user every time: no two of these records can be coalesced.
                #expect(
                    try await connection.errorCode("remove_user", ["user_id": .string("u_\(cycle)")])
                        == "permission_denied"
                )
                connection.close()
            }
            // Every lease has died with its connection (and been audited).
            try await eventually { server.registry.leases.all().isEmpty }
            audit.flush()
            let flooded = records.all.filter { $0.metadata["peer.uid"] == "\(Self.flooder)" }
            #expect(
                flooded.count <= Self.limit,
                "\(cycles) cycles wrote \(flooded.count) records in one second of the test clock"
            )

            // Another uid, in the same second, is not held back by the flood.
            let other = try await server.connect(asUID: Self.bystander)
            #expect(try await other.errorCode("remove_user", ["user_id": "u_other"]) == "permission_denied")
            audit.flush()
            #expect(
                records.all.contains {
                    $0.metadata["peer.uid"] == "\(Self.bystander)" && $0.metadata["action"] == "remove_user"
                }
            )

            // When the flooder's second is over, one record says how many were suppressed.
            time.advance(.seconds(1))
            budget.flush()
            let summaries = records.all.filter {
                $0.message == "log records suppressed" && $0.metadata["peer.uid"] == "\(Self.flooder)"
            }
            #expect(summaries.count == 1)
            let suppressed = Int(summaries.first?.metadata["suppressed"] ?? "") ?? 0
            #expect(suppressed >= cycles - Self.limit, "suppressed=\(suppressed)")
            #expect(records.all.filter { $0.metadata["peer.uid"] == "\(Self.flooder)" }.count <= Self.limit + 1)
            other.close()
        }
    }

    @Test func aLeaseTakenAndReleasedByOneProcessIsCoalesced() async throws {
        let records = LogRecorder()
        let time = TestTime()
        let audit = AuditLog(now: time.source)
        // No per-second bound here (a limit no test reaches): coalescing alone folds one process's churn.
        let budget = PeerLogBudget(limit: { 1_000_000 }, logger: records.logger(), now: time.source)
        try await InProcessServer.with(logger: records.logger(), auditLog: audit, logBudget: budget) { server in
            for cycle in 0..<100 {
                let connection = try server.connect()
                _ = try await connection.result("inhibit", ["mode": "delay", "who": .string("w\(cycle)"), "why": "x"])
                connection.close()
            }
            try await eventually { server.registry.leases.all().isEmpty }
            audit.flush()
            // One record for the first lease taken (with its id, seat, mode and who) and one for its release; repeats
            // are only counted.
            #expect(records.all.count == 2, "\(records.all.map(\.line))")
            let taken = records.all.first { $0.metadata["action"] == "inhibit" }
            #expect(taken?.metadata["lease"] != nil && taken?.metadata["lease.who"] == "w0")
            let released = records.all.first { $0.metadata["action"] == "release" }
            #expect(released?.metadata["outcome"] == "connection_closed" && released?.metadata["lease"] != nil)
            time.advance(.seconds(60))
            audit.flush(all: true)
            let summaries = records.all.filter { $0.metadata["repeated"] != nil }
            #expect(summaries.count == 2)
            #expect(summaries.allSatisfy { $0.metadata["repeated"] == "99" })
        }
    }

    @Test func rootIsNotCounted() async throws {
        let records = LogRecorder()
        let time = TestTime()
        let audit = AuditLog(now: time.source)
        let budget = PeerLogBudget(limit: { Self.limit }, logger: records.logger(), now: time.source)
        try await InProcessServer.with(logger: records.logger(), auditLog: audit, logBudget: budget) { server in
            // Root (a login screen, say) logs users in and out: every record differs, and every one is written.
            let connection = try server.connect()
            for _ in 0..<Self.limit {
                _ = try await connection.result("login", ["credentials": ["type": "anonymous"]])
                _ = try await connection.result("logout")
            }
            audit.flush()
            let mine = records.all.filter { $0.metadata["peer.uid"] == "\(getuid())" && $0.message == "audit" }
            #expect(mine.count == 2 * Self.limit)
            #expect(!records.all.contains { $0.message == "log records suppressed" })
        }
    }
}
