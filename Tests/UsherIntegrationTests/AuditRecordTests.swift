import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Audit records on the real daemon: one record per line whatever a request holds, bounded fields, and floods of
/// denials coalesced.
@Suite(.integrationHangGuard)
struct AuditRecordTests {
    /// The daemon's log lines that are audit records for `action`.
    static func auditLines(_ daemon: DaemonProcess, action: String) -> [Substring] {
        daemon.log.split(separator: "\n", omittingEmptySubsequences: false).filter {
            $0.contains("audit") && $0.contains("action=\(action)")
        }
    }

    @Test(arguments: [false, true])
    func aNULOrLineBreakInARequestFieldCannotForgeARecord(journal: Bool) async throws {
        try await DaemonProcess.using(try DaemonProcess()) { daemon in
            var environment = SystemdTests.environment([:])
            if journal {
                // stderr is the log file: make the daemon believe it is the journal, so it writes `<N>` lines.
                _ = FileManager.default.createFile(atPath: daemon.logPath, contents: nil)
                var info = stat()
                #expect(stat(daemon.logPath, &info) == 0)
                environment["JOURNAL_STREAM"] = "\(info.st_dev):\(info.st_ino)"
            }
            try await daemon.start(environment: environment)
            let connection = try daemon.connect()
            // A JSON escape puts NUL, CR, LF, ESC and a C1 control into the user id; the raw bytes never reach the log.
            try connection.send(
                #"{"id":1,"method":"logout","params":"#
                    + #"{"user_id":"u_x\u0000\r\nforged outcome=ok peer.uid=0 \u001b[2J\u0085"}}"#
            )
            let answer = try await connection.readObject()
            #expect(answer["error"]?["code"] == "user_not_found")

            // Written off the request path: wait for the record.
            try await eventually { !Self.auditLines(daemon, action: "logout").isEmpty }
            let log = try Data(contentsOf: URL(fileURLWithPath: daemon.logPath))
            #expect(!log.contains(0), "a NUL byte reached the log")
            #expect(!log.contains(0x1B), "an ESC reached the log")
            let lines = Self.auditLines(daemon, action: "logout")
            #expect(lines.count == 1, "\(lines)")
            let line = try #require(lines.first)
            #expect(line.contains(#"user.id="u_x\u0000\r\nforged outcome=ok peer.uid=0 \u001b[2J\u0085""#), "\(line)")
            #expect(line.contains("outcome=user_not_found"))
            if journal { #expect(line.hasPrefix("<6>audit ")) }
            #expect(!daemon.log.split(separator: "\n").contains { $0.hasPrefix("forged") })
        }
    }

    @Test func aSixtyKilobyteFieldIsCut() async throws {
        try await DaemonProcess.with { daemon in
            let connection = try daemon.connect()
            let userID = String(repeating: "u", count: 60_000)
            #expect(try await connection.errorCode("logout", ["user_id": .string(userID)]) == "user_not_found")
            try await eventually { !Self.auditLines(daemon, action: "logout").isEmpty }
            let line = try #require(Self.auditLines(daemon, action: "logout").first)
            #expect(line.utf8.count < 1024, "an audit line of \(line.utf8.count) bytes")
            #expect(line.contains("…[60000 bytes, cut]"))
        }
    }

    @Test func aFloodOfDeniedRequestsIsCoalescedWithItsCount() async throws {
        try await DaemonProcess.using(try await AccessPolicyTests.reachableDaemon("")) { daemon in
            try await daemon.start()
            // Another uid with no permission pipelines 500 requests it may not make, on one connection (their answers
            // stay below a socket buffer, so that the test does not depend on how a half-closed connection is drained).
            let count = 500
            let lines = (0..<count).map { #"{"id":\#($0),"method":"logout","params":{"user_id":"u_victim"}}"# }
            let answers = try await OtherUser.send(daemon, lines)
            #expect(answers.count == count)
            #expect(answers.allSatisfy { $0["error"]?["code"] == "permission_denied" })

            // The first is recorded at once (off the request path: wait for it); the rest are counted, and the count is
            // written when the window ends or, as here, when the daemon stops.
            try await eventually { !Self.auditLines(daemon, action: "logout").isEmpty }
            #expect(Self.auditLines(daemon, action: "logout").count == 1)
            #expect(try await daemon.stop() == 0)
            let records = Self.auditLines(daemon, action: "logout")
            #expect(records.count == 2, "\(records.count) lines for \(count) denials")
            #expect(records.allSatisfy { $0.contains("outcome=denied") && $0.contains("peer.uid=65534") })
            #expect(records.last?.contains("repeated=\(count - 1)") == true, "\(records)")
        }
    }
}
