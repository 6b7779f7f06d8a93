import Logging
import Testing
import UsherProtocol
import UsherServer
import UsherTestSupport

/// Coalescing of refusals in the audit log, driven by a test clock.
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

    @Test func aFloodOfDenialsIsOneLineAndOneSummaryPerWindow() {
        let time = TestTime()
        let records = LogRecorder()
        let audit = AuditLog(logger: records.logger(), window: .seconds(60), now: time.source)
        for _ in 0..<10_000 { Self.deny(audit, records) }
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
        #expect(records.all.count == 3 && records.all[2].metadata["repeated"] == nil)
        #expect(audit.trackedCount == 1)
    }

    @Test func eachPeerAndActionHasItsOwnFirstRecordAndWindowEndsAreSummarisedOnTheNextDenialToo() {
        let time = TestTime()
        let records = LogRecorder()
        let audit = AuditLog(logger: records.logger(), window: .seconds(60), now: time.source)
        Self.deny(audit, records)
        Self.deny(audit, records, action: "remove_user")
        Self.deny(audit, records, peer: PeerCredentials(uid: 1000, gid: 1000, pid: 5000))
        Self.deny(audit, records, peer: PeerCredentials(uid: 1001, gid: 1001, pid: 4242))
        #expect(records.all.count == 4)
        Self.deny(audit, records)
        time.advance(.seconds(61))
        // No flush ran: the denial that opens the next window writes the previous window's summary first.
        Self.deny(audit, records)
        #expect(records.all.suffix(2).map { $0.metadata["repeated"] } == ["1", nil])
    }

    @Test func theTableIsBoundedAndNoCountIsLost() {
        let time = TestTime()
        let records = LogRecorder()
        let audit = AuditLog(logger: records.logger(), window: .seconds(60), maximumTracked: 8, now: time.source)
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

    @Test func grantedCallsAreNeverCoalescedAndRequestValuesAreBounded() {
        let records = LogRecorder()
        let audit = AuditLog(logger: records.logger(), now: TestTime().source)
        for _ in 0..<3 {
            audit.record(
                action: "access_token",
                userID: String(repeating: "u", count: 60_000),
                outcome: "ok",
                peer: Self.peer,
                executable: nil,
                logger: records.logger()
            )
        }
        #expect(records.all.count == 3)
        let userID = records.all[0].metadata["user.id"] ?? ""
        #expect(userID.utf8.count < 300)
        #expect(userID.hasSuffix("…[60000 bytes, cut]"))
    }
}
