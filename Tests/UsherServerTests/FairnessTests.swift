import Foundation
import Logging
import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherServer
import UsherTestSupport

/// CPU fairness: hostile connections cannot make others wait. Measured by counting what the server did in between,
/// never by timing it.
@Suite(.timeLimit(.minutes(3)))
struct FairnessTests {
    /// A `hello` of about 62 KB whose params hold 7,000 keys: allowed for anyone, and expensive to decode.
    static let heavyHello: [UInt8] = {
        let keys = (0..<7000).map { "\"k\(String($0, radix: 36))\":0" }.joined(separator: ",")
        return Array("{\"id\":1,\"method\":\"hello\",\"params\":{\(keys)}}\n".utf8)
    }()

    /// Connections that pipeline `count` copies of `line` as fast as the server takes them (and read and drop the
    /// answers, so that the server never has to slow down for them), each from a thread of its own, until `stop`.
    ///
    /// Bounded, so that a server that does not share its threads fairly (which starves this test process too: it
    /// runs the server) still comes to an end and fails the test instead of hanging it.
    final class Flood: Sendable {
        private let stopped = Atomic<Bool>(false)
        private let running = Atomic<Int>(0)

        init(descriptors: [Int32], line: [UInt8], count: Int) {
            for descriptor in descriptors {
                self.running.add(1, ordering: .relaxed)
                Thread {
                    defer {
                        close(descriptor)
                        self.running.subtract(1, ordering: .releasing)
                    }
                    var offset = 0
                    var remaining = count * line.count
                    var sink = [UInt8](repeating: 0, count: 1 << 16)
                    while !self.stopped.load(ordering: .relaxed) {
                        let events = remaining > 0 ? POLLIN | POLLOUT : POLLIN
                        var poller = pollfd(fd: descriptor, events: Int16(events), revents: 0)
                        guard poll(&poller, 1, 50) >= 0 || errno == EINTR else { return }
                        if poller.revents & Int16(POLLIN) != 0 {
                            let count = sink.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                            if count == 0 { return }
                        }
                        if poller.revents & Int16(POLLOUT) != 0 {
                            let sent = line[offset...].withUnsafeBytes {
                                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
                            }
                            if sent > 0 {
                                offset = (offset + sent) % line.count
                                remaining -= sent
                            }
                            if sent < 0, errno != EAGAIN, errno != EINTR { return }
                        }
                        if poller.revents & Int16(POLLHUP | POLLERR) != 0 { return }
                    }
                }.start()
            }
        }

        /// Stops every connection and waits (hang guard: a minute) until their threads have closed them.
        func stop() async throws {
            self.stopped.store(true, ordering: .relaxed)
            try await eventually { self.running.load(ordering: .acquiring) == 0 }
        }
    }

    /// What the server had answered in all at each of its answers to one uid, recorded as it wrote them.
    final class AnswerLog: Sendable {
        private let uid: UInt32
        private let counts = Mutex<[Int]>([])

        init(uid: UInt32) { self.uid = uid }

        var observer: @Sendable (UInt32, Int) -> Void {
            { uid, answeredSoFar in
                if uid == self.uid { self.counts.withLock { $0.append(answeredSoFar) } }
            }
        }

        var answers: [Int] { self.counts.withLock { $0 } }
    }

    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func hostileConnectionsCannotStallOthers() async throws {
        let rootAnswers = AnswerLog(uid: getuid())
        try await InProcessServer.with(answerObserver: rootAnswers.observer) { server in
            // Eight connections from a uid with no permissions: `hello` is all they may do.
            var descriptors: [Int32] = []
            for _ in 0..<8 {
                let path = server.socketPath
                descriptors.append(try await OtherUser.run { try LineConnection.connectedDescriptor(path: path) })
            }
            let root = try server.connect()
            root.timeout = .seconds(60)
            _ = try await root.result("hello")
            let flood = Flood(descriptors: descriptors, line: Self.heavyHello, count: 60)
            let measured: Result<([Int], Int), any Error>
            do {
                measured = .success(try await Self.measure(root, server, rootAnswers))
            } catch {
                measured = .failure(error)
            }
            try await flood.stop()
            let (inBetween, answeredDuringFlood) = try measured.get()
            print("hostile requests answered while one of root's waited: max \(inBetween.max()!), \(inBetween)")
            // Each of root's requests is answered after at most a few rounds of the eight hostile connections.
            #expect(inBetween.max()! <= 8 * 16, "root's request waited behind \(inBetween.max()!) others")
            #expect(answeredDuringFlood > 130, "the hostile connections were served too")
        }
    }

    /// Sends root's requests one at a time while the flood runs; returns how many other requests the server answered
    /// between the moment each of root's was sent and the moment the server wrote its answer, and how many it
    /// answered in all.
    ///
    /// Counted where the server writes the answer (`rootAnswers`), not when this test reads it: how long this task
    /// takes to be scheduled again on a loaded machine is not the server's doing.
    static func measure(
        _ root: LineConnection,
        _ server: InProcessServer,
        _ rootAnswers: AnswerLog
    ) async throws -> ([Int], Int) {
        // Wait until the flood is being answered.
        let floodStart = server.tracker.requestsAnswered
        try await eventually { server.tracker.requestsAnswered >= floodStart + 100 }
        var inBetween: [Int] = []
        for _ in 0..<30 {
            let earlier = rootAnswers.answers.count
            let before = server.tracker.requestsAnswered
            #expect(try await root.result("current_user")["generation"] != nil)
            // Recorded just after the answer was handed to the writer: it may still be on its way here.
            try await eventually { rootAnswers.answers.count > earlier }
            inBetween.append(rootAnswers.answers[earlier] - before - 1)
        }
        return (inBetween, server.tracker.requestsAnswered - floodStart)
    }

    @Test func aPeerWithoutPermissionIsRefusedBeforeItsParamsAreDecoded() async throws {
        let registry = try await InProcessServer.makeRegistry()
        let dispatcher = Dispatcher(
            registry: registry,
            version: "test",
            settings: ServerSettings(limits: ServerLimits(), policy: AccessPolicy(daemonUID: 0)),
            connectionCount: { 1 }
        )
        // Valid JSON grammar, but params that cannot be decoded (a number out of range): the stranger learns only
        // that it may not list users, root that its request is malformed.
        let line = Array(#"{"id":7,"method":"list_users","params":{"x":1e999}}"#.utf8)
        let logger = InProcessServer.logger
        let stranger = Dispatcher.Context(peer: PeerCredentials(uid: 4242, gid: 4242, pid: 1), logger: logger)
        let root = Dispatcher.Context(peer: PeerCredentials(uid: 0, gid: 0, pid: 1), logger: logger)
        #expect(try Self.errorCode(await dispatcher.handle(line: line, context: stranger)) == "permission_denied")
        #expect(try Self.errorCode(await dispatcher.handle(line: line, context: root)) == "invalid_request")
    }

    @Test func permissionsFollowThePolicyInForceForEveryRequest() async throws {
        let registry = try await InProcessServer.makeRegistry()
        let reader = AccessRule(.uid(4242), allow: [.read])
        let settings = ServerSettings(limits: ServerLimits(), policy: AccessPolicy(daemonUID: 0, rules: [reader]))
        let dispatcher = Dispatcher(registry: registry, version: "test", settings: settings, connectionCount: { 1 })
        let peer = Dispatcher.Context(
            peer: PeerCredentials(uid: 4242, gid: 4242, pid: 1),
            logger: InProcessServer.logger
        )
        let line = Array(#"{"id":1,"method":"current_user"}"#.utf8)
        #expect(try Self.errorCode(await dispatcher.handle(line: line, context: peer)) == nil)
        settings.policy = AccessPolicy(daemonUID: 0)
        #expect(try Self.errorCode(await dispatcher.handle(line: line, context: peer)) == "permission_denied")
    }

    static func errorCode(_ outcome: Dispatcher.Outcome) throws -> String? {
        guard case .response(let reply) = outcome else { throw TestSupportError("expected a response") }
        let object = try JSONDecoder().decode(JSONValue.self, from: Data(reply.line))
        return object["error"]?["code"]?.stringValue
    }
}
