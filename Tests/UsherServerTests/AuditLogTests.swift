import Logging
import Testing
import UsherProtocol
import UsherServer
import UsherTestSupport

/// Coalescing of identical audit records, and their writing off the request path, driven by a test clock.
@Suite(.timeLimit(.minutes(1)))
struct AuditLogTests {
    static let peer = PeerCredentials(uid: 1000, gid: 1000, pid: 4242)

    static func deny(
        _ audit: AuditLog,
        _ records: LogRecorder,
        peer: PeerCredentials = Self.peer,
        action: String = "logout"
    ) {
        audit.record(
            action: action,
            userID: "u_1",
            outcome: "denied",
            permission: .manage,
            peer: peer,
            executable: "/usr/bin/socat",
            logger: records.logger()
        )
    }

    static func grant(
        _ audit: AuditLog,
        _ records: LogRecorder,
        action: String = "access_token",
        userID: String = "u_1",
        expiresAt: Int64? = nil
    ) {
        audit.record(
            action: action,
            userID: userID,
            outcome: "ok",
            peer: Self.peer,
            executable: "/usr/bin/curl",
            logger: records.logger(),
            tokenExpiresAt: expiresAt.map(Timestamp.init(millisecondsSinceEpoch:))
        )
    }

    @Test func aFloodOfDenialsIsOneLineAndOneSummaryPerWindow() {
        let time = TestTime()
        let records = LogRecorder()
        let audit = AuditLog(window: .seconds(60), now: time.source)
        for _ in 0..<10_000 { Self.deny(audit, records) }
        // Recording writes nothing: the line is written by the next flush (`run()` in the daemon).
        #expect(records.all.isEmpty)
        audit.flush()
        #expect(records.all.count == 1)
        #expect(records.all[0].metadata["outcome"] == "denied" && records.all[0].metadata["repeated"] == nil)
        // Nothing is summarised before the window ends.
        time.advance(.seconds(59))
        audit.flush()
        #expect(records.all.count == 1)
        time.advance(.seconds(1))
        audit.flush()
        #expect(records.all.count == 2)
        let summary = records.all[1]
        #expect(summary.metadata["repeated"] == "9999")
        #expect(summary.metadata["peer.uid"] == "1000" && summary.metadata["peer.pid"] == "4242")
        #expect(summary.metadata["action"] == "logout" && summary.metadata["permission"] == "manage")
        #expect(summary.level == .notice)
        // The next window starts with a full record again.
        Self.deny(audit, records)
        audit.flush()
        #expect(records.all.count == 3 && records.all[2].metadata["repeated"] == nil)
        #expect(audit.trackedCount == 1)
    }

    @Test func eachPeerAndActionHasItsOwnFirstRecordAndAnEndedWindowIsSummarisedBeforeTheNextOne() {
        let time = TestTime()
        let records = LogRecorder()
        let audit = AuditLog(window: .seconds(60), now: time.source)
        Self.deny(audit, records)
        Self.deny(audit, records, action: "remove_user")
        Self.deny(audit, records, peer: PeerCredentials(uid: 1000, gid: 1000, pid: 5000))
        Self.deny(audit, records, peer: PeerCredentials(uid: 1001, gid: 1001, pid: 4242))
        audit.flush()
        #expect(records.all.count == 4)
        // In the order they happened.
        #expect(records.all.map { $0.metadata["action"] } == ["logout", "remove_user", "logout", "logout"])
        #expect(records.all.map { $0.metadata["peer.pid"] } == ["4242", "4242", "5000", "4242"])
        Self.deny(audit, records)
        time.advance(.seconds(61))
        // The denial that opens the next window retires the previous one: its summary comes first.
        Self.deny(audit, records)
        audit.flush()
        #expect(records.all.suffix(2).map { $0.metadata["repeated"] } == ["1", nil])
    }

    @Test func theTableIsBoundedAndNoCountIsLost() {
        let time = TestTime()
        let records = LogRecorder()
        let audit = AuditLog(window: .seconds(60), maximumTracked: 8, now: time.source)
        for pid in 0..<100 {
            let peer = PeerCredentials(uid: 1000, gid: 1000, pid: Int32(pid))
            Self.deny(audit, records, peer: peer)
            Self.deny(audit, records, peer: peer)
            Self.deny(audit, records, peer: peer)
            #expect(audit.trackedCount <= 8)
        }
        audit.flush(all: true)
        #expect(audit.trackedCount == 0)
        let first = records.all.filter { $0.metadata["repeated"] == nil }
        let repeated = records.all.compactMap { $0.metadata["repeated"].flatMap { Int($0) } }
        #expect(first.count == 100)
        #expect(repeated.reduce(0, +) == 200)
    }

    @Test func identicalGrantedCallsAreCoalescedAndRequestValuesAreBounded() {
        let time = TestTime()
        let records = LogRecorder()
        let audit = AuditLog(window: .seconds(60), now: time.source)
        let longID = String(repeating: "u", count: 60_000)
        for _ in 0..<1000 { Self.grant(audit, records, userID: longID, expiresAt: 1_000) }
        audit.flush()
        #expect(records.all.count == 1)
        let userID = records.all[0].metadata["user.id"] ?? ""
        #expect(userID.utf8.count < 300)
        #expect(userID.hasSuffix("…[60000 bytes, cut]"))
        #expect(records.all[0].metadata["outcome"] == "ok" && records.all[0].level == .info)
        time.advance(.seconds(60))
        audit.flush()
        #expect(records.all.count == 2)
        #expect(records.all[1].metadata["repeated"] == "999")
        #expect(records.all[1].metadata["action"] == "access_token")
        #expect(!records.text.contains("eyJ"))
    }

    @Test func anotherTokenAnotherUserOrAnotherChangeIsAnotherRecord() {
        let records = LogRecorder()
        let audit = AuditLog(now: TestTime().source)
        Self.grant(audit, records, expiresAt: 1_000)
        Self.grant(audit, records, expiresAt: 1_000)
        // The token was refreshed: the new one is recorded.
        Self.grant(audit, records, expiresAt: 2_000)
        Self.grant(audit, records, userID: "u_2", expiresAt: 2_000)
        Self.grant(audit, records, action: "switch_user", userID: "u_2")
        Self.grant(audit, records, action: "logout", userID: "u_1")
        Self.grant(audit, records, action: "login", userID: "u_1")
        audit.flush()
        #expect(
            records.all.map { $0.metadata["action"] } == [
                "access_token", "access_token", "access_token", "switch_user", "logout", "login",
            ]
        )
        #expect(records.all.map { $0.metadata["token.expires_at"] != nil } == [true, true, true, false, false, false])
        #expect(records.all.map { $0.metadata["user.id"] } == ["u_1", "u_1", "u_2", "u_2", "u_1", "u_1"])
        // The repeat is counted, for the summary at the window's end.
        audit.flush(all: true)
        #expect(records.all.last?.metadata["repeated"] == "1")
    }

    @Test func tokensNarrowedDifferentlyAreDifferentRecordsEvenWhenTheyExpireTogether() {
        let records = LogRecorder()
        let audit = AuditLog(now: TestTime().source)
        func narrowed(_ audience: String, _ scopes: String, lease: String = "") {
            var details: Logger.Metadata = ["token.audience": "\(audience)", "token.scopes": "\(scopes)"]
            if !lease.isEmpty { details["lease"] = "\(lease)" }
            audit.record(
                action: "access_token",
                userID: "u_1",
                outcome: "ok",
                peer: Self.peer,
                executable: "/opt/kiosk/bank",
                logger: records.logger(),
                tokenExpiresAt: Timestamp(millisecondsSinceEpoch: 1_000),
                details: details
            )
        }
        narrowed("https://bank.example", "balance")
        narrowed("https://bank.example", "balance")
        narrowed("https://bank.example", "balance transfer")
        narrowed("https://media.example", "balance")
        // A detail that is not compared does not make another record.
        narrowed("https://media.example", "balance", lease: "l_9")
        audit.flush()
        #expect(
            records.all.map { [$0.metadata["token.audience"], $0.metadata["token.scopes"]] } == [
                ["https://bank.example", "balance"], ["https://bank.example", "balance transfer"],
                ["https://media.example", "balance"],
            ]
        )
        audit.flush(all: true)
        #expect(records.all.compactMap { $0.metadata["repeated"] } == ["1", "1"])
    }

    @Test func theServiceWritesAFirstRecordAsSoonAsItIsRecorded() async throws {
        let records = LogRecorder()
        // A window of an hour: the service's timer (a quarter window) cannot be what writes the record within the
        // test's time limit; only the wake-up from `record` can.
        let audit = AuditLog(window: .seconds(3600))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await audit.run() }
            Self.grant(audit, records, expiresAt: 1_000)
            try await records.wait { $0.count == 1 }
            Self.grant(audit, records, action: "logout")
            try await records.wait { $0.count == 2 }
            #expect(records.all.map { $0.metadata["action"] } == ["access_token", "logout"])
            #expect(records.all.allSatisfy { $0.metadata["repeated"] == nil })
            group.cancelAll()
        }
    }

    @Test func theServiceWritesTheCountWhenTheWindowEnds() async throws {
        let time = TestTime()
        let records = LogRecorder()
        // The window ends when the test moves its clock; the service looks every quarter window (50 ms of real time).
        let audit = AuditLog(window: .milliseconds(200), now: time.source)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await audit.run() }
            for _ in 0..<3 { Self.grant(audit, records, expiresAt: 1_000) }
            try await records.wait { $0.count == 1 }
            #expect(records.all[0].metadata["repeated"] == nil)
            time.advance(.milliseconds(200))
            try await records.wait { $0.count == 2 }
            #expect(records.all[1].metadata["repeated"] == "2")
            group.cancelAll()
        }
        #expect(records.all.count == 2)
    }
}
