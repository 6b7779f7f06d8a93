import Logging
import Testing
import UsherCore
import UsherProtocol
import UsherServer
import UsherTestSupport

/// Reads answered from the published state, on the event loop, are audited by the dispatcher when the method table
/// says their method is (`access_token`), and not otherwise (`list_users`), as the answers through the registry are.
@Suite(.timeLimit(.minutes(1)))
struct ReadAuditTests {
    @Test func aTokenReadFromThePublishedStateIsAuditedAndAListIsNot() async throws {
        let records = LogRecorder()
        let registry = try await InProcessServer.makeRegistry()
        let audit = AuditLog(now: TestTime().source)
        let dispatcher = Dispatcher(
            registry: registry,
            version: "test",
            settings: ServerSettings(limits: ServerLimits(), policy: AccessPolicy(daemonUID: 0)),
            auditLog: audit,
            connectionCount: { 1 }
        )
        let root = Dispatcher.Context(peer: PeerCredentials(uid: 0, gid: 0, pid: 1), logger: records.logger())
        let login = await dispatcher.handle(
            line: Array(#"{"id":1,"method":"login","params":{"credentials":{"type":"anonymous"}}}"#.utf8),
            context: root
        )
        guard case .response(let loggedIn) = login else {
            Issue.record("login did not answer with a line")
            return
        }
        #expect(String(decoding: loggedIn.line, as: UTF8.self).contains("\"result\""))
        audit.flush(all: true)
        let afterLogin = records.all.count

        // Answered on the event loop: no `pending` step, so no registry call audited it.
        let token = dispatcher.begin(line: Array(#"{"id":2,"method":"access_token"}"#.utf8), context: root)
        guard case .answered(let tokenLine) = token else {
            Issue.record("a fresh token was not answered from the published state")
            return
        }
        #expect(String(decoding: tokenLine.line, as: UTF8.self).contains("access_token"))
        let list = dispatcher.begin(line: Array(#"{"id":3,"method":"list_users"}"#.utf8), context: root)
        guard case .answered = list else {
            Issue.record("list_users was not answered from the published state")
            return
        }
        audit.flush(all: true)
        let read = records.all.dropFirst(afterLogin)
        #expect(read.map { $0.metadata["action"] } == ["access_token"])
        #expect(read.first?.metadata["outcome"] == "ok")
        #expect(read.first?.metadata["user.id"]?.hasPrefix("u_") == true)
        #expect(read.first?.metadata["token.expires_at"] != nil)
    }
}
