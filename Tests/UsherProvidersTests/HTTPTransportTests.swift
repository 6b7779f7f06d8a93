import Foundation
import Testing
import UsherHTTP
import UsherTestSupport

/// The daemon's HTTP transport (libcurl) against a scripted server on loopback: what it sends, what it hands back, and
/// what it refuses to do.
@Suite(.timeLimit(.minutes(2)))
struct HTTPTransportTests {
    private static let limit = 1 << 20

    private static func withTransport<T>(
        _ body: (HTTPTransport, ScriptedHTTPServer) async throws -> T
    ) async throws -> T {
        let transport = HTTPTransport()
        let server = try ScriptedHTTPServer()
        defer {
            transport.shutdown()
            server.stop()
        }
        return try await body(transport, server)
    }

    private static func outcome(
        _ transport: HTTPTransport,
        _ request: HTTPRequest,
        timeout: Duration = hangGuard,
        limit: Int = Self.limit
    ) async -> Result<HTTPResponse, HTTPTransportError> {
        do {
            return .success(try await transport.send(request, timeout: timeout, maximumBodyBytes: limit))
        } catch {
            return .failure(error)
        }
    }

    @Test func aGetSendsItsHeadersAndGetsStatusHeadersAndBody() async throws {
        try await Self.withTransport { transport, server in
            server.handle("/userinfo") { _ in
                .response(203, headers: [("DPoP-Nonce", "n-1"), ("Content-Type", "application/json")], body: "{}")
            }
            let request = HTTPRequest(
                .get,
                "http://127.0.0.1:\(server.port)/userinfo?x=1",
                headers: [(name: "Authorization", value: "Bearer abc"), (name: "Accept", value: "application/json")]
            )
            let response = try await transport.send(request, timeout: hangGuard, maximumBodyBytes: Self.limit)
            #expect(response.status == 203)
            #expect(response.header("dpop-nonce") == "n-1")
            #expect(response.header("CONTENT-TYPE") == "application/json")
            #expect(response.header("X-Missing") == nil)
            #expect(response.body == Array("{}".utf8))
            let seen = try #require(server.requests(to: "/userinfo").first)
            #expect(seen.method == "GET")
            #expect(seen.query == ["x": "1"])
            #expect(seen.headers["authorization"] == "Bearer abc")
            #expect(seen.headers["accept"] == "application/json")
            #expect(seen.headers["user-agent"] == "usherd")
        }
    }

    @Test func aPostSendsItsBodyAndADeleteIsADelete() async throws {
        try await Self.withTransport { transport, server in
            server.handle("/token") { _ in .json(200, #"{"ok":true}"#) }
            server.handle("/account") { _ in .status(204, contentType: "text/plain", body: "") }
            let form = HTTPRequest(
                .post,
                "http://127.0.0.1:\(server.port)/token",
                headers: [(name: "Content-Type", value: "application/x-www-form-urlencoded")],
                body: Array("grant_type=refresh_token&refresh_token=r%2B1".utf8)
            )
            #expect(try await transport.send(form, timeout: hangGuard, maximumBodyBytes: Self.limit).status == 200)
            let seen = try #require(server.requests(to: "/token").first)
            #expect(seen.method == "POST")
            #expect(seen.form == ["grant_type": "refresh_token", "refresh_token": "r+1"])
            #expect(seen.headers["expect"] == nil, "no 100-continue round trip")

            let empty = HTTPRequest(.post, "http://127.0.0.1:\(server.port)/account")
            #expect(try await transport.send(empty, timeout: hangGuard, maximumBodyBytes: Self.limit).status == 204)
            let delete = HTTPRequest(.delete, "http://127.0.0.1:\(server.port)/account")
            #expect(try await transport.send(delete, timeout: hangGuard, maximumBodyBytes: Self.limit).status == 204)
            #expect(server.requests(to: "/account").map(\.method) == ["POST", "DELETE"])
        }
    }

    @Test func aGetFollowsRedirectsAndAPostIsNeverSentOn() async throws {
        try await Self.withTransport { transport, server in
            let base = "http://127.0.0.1:\(server.port)"
            server.handle("/old") { _ in .response(302, headers: [("Location", "\(base)/new")], body: "") }
            server.handle("/new") { _ in .json(200, #"{"moved":true}"#) }
            server.handle("/form") { _ in .response(307, headers: [("Location", "\(base)/elsewhere")], body: "") }
            server.handle("/file") { _ in .response(302, headers: [("Location", "file:///etc/hostname")], body: "") }

            let moved = try await transport.send(
                HTTPRequest(.get, "\(base)/old"),
                timeout: hangGuard,
                maximumBodyBytes: Self.limit
            )
            #expect(moved.status == 200)
            #expect(moved.body == Array(#"{"moved":true}"#.utf8))

            let post = await Self.outcome(transport, HTTPRequest(.post, "\(base)/form", body: Array("code=c".utf8)))
            #expect(throws: HTTPTransportError.redirected(status: 307)) { try post.get() }
            #expect(server.requests(to: "/elsewhere").isEmpty, "the form went nowhere else")

            // Only http and https, on redirects too: a provider cannot make the daemon read a local file.
            guard case .failure(.failed) = await Self.outcome(transport, HTTPRequest(.get, "\(base)/file")) else {
                Issue.record("a redirect to file:// was followed")
                return
            }
            guard case .failure(.failed) = await Self.outcome(transport, HTTPRequest(.get, "file:///etc/hostname"))
            else {
                Issue.record("a file:// URL was fetched")
                return
            }
        }
    }

    @Test func aLongerBodyThanAllowedFailsTheRequest() async throws {
        try await Self.withTransport { transport, server in
            server.handle("/big") { _ in
                .status(200, contentType: "text/plain", body: String(repeating: "x", count: 5000))
            }
            let url = "http://127.0.0.1:\(server.port)/big"
            let small = await Self.outcome(transport, HTTPRequest(.get, url), limit: 4096)
            #expect(throws: HTTPTransportError.tooLarge(limit: 4096)) { try small.get() }
            let enough = await Self.outcome(transport, HTTPRequest(.get, url), limit: 5000)
            let body = try enough.get().body
            #expect(body.count == 5000)
        }
    }

    @Test func unreachableStalledAndUnspeakableServersFailWithTheirReason() async throws {
        try await Self.withTransport { transport, server in
            let refusing = try RefusingPort()
            guard case .failure(.unreachable) = await Self.outcome(transport, HTTPRequest(.get, refusing.base + "/x"))
            else {
                Issue.record("a refused connection is not unreachable")
                return
            }
            server.handle("/stall") { _ in .stall }
            // The server never answers: only the time limit ends the request.
            let stalled = await Self.outcome(
                transport,
                HTTPRequest(.get, "http://127.0.0.1:\(server.port)/stall"),
                timeout: .milliseconds(300)
            )
            guard case .failure(.timedOut) = stalled else {
                Issue.record("expected timedOut, got \(stalled)")
                return
            }
            server.handle("/garbage") { _ in .garbage }
            guard
                case .failure(.failed) = await Self.outcome(
                    transport,
                    HTTPRequest(.get, "http://127.0.0.1:\(server.port)/garbage")
                )
            else {
                Issue.record("garbage was taken for an answer")
                return
            }
        }
    }

    @Test func cancellingTheWaitingTaskAbortsTheRequest() async throws {
        try await Self.withTransport { transport, server in
            server.handle("/stall") { _ in .stall }
            let request = HTTPRequest(.get, "http://127.0.0.1:\(server.port)/stall")
            // An hour's limit: only the cancellation can end it within the test's time limit.
            let waiting = Task { await Self.outcome(transport, request, timeout: .seconds(3600)) }
            try await eventually { !server.requests(to: "/stall").isEmpty }
            waiting.cancel()
            await #expect(throws: HTTPTransportError.cancelled) { try await waiting.value.get() }

            // Cancelled before it was sent: it is never sent.
            let early = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await Self.outcome(transport, HTTPRequest(.get, "http://127.0.0.1:\(server.port)/never"))
            }
            await #expect(throws: HTTPTransportError.cancelled) { try await early.value.get() }
            #expect(server.requests(to: "/never").isEmpty)
        }
    }

    @Test func shuttingDownFailsWhatIsWaitingAndWhatComesLater() async throws {
        try await Self.withTransport { transport, server in
            server.handle("/stall") { _ in .stall }
            let request = HTTPRequest(.get, "http://127.0.0.1:\(server.port)/stall")
            let waiting = Task { await Self.outcome(transport, request, timeout: .seconds(3600)) }
            try await eventually { !server.requests(to: "/stall").isEmpty }
            transport.shutdown()
            await #expect(throws: HTTPTransportError.shutDown) { try await waiting.value.get() }
            await #expect(throws: HTTPTransportError.shutDown) { try await Self.outcome(transport, request).get() }
        }
    }

    @Test func requestsRunConcurrently() async throws {
        try await Self.withTransport { transport, server in
            // Each reply waits until all twenty requests have arrived: one at a time, the first would never be answered.
            // (Every connection has a thread of its own in the server; each arrival wakes the ones waiting.)
            let arrivals = NSCondition()
            nonisolated(unsafe) var arrived = 0
            server.handle("/all") { _ in
                arrivals.lock()
                defer { arrivals.unlock() }
                arrived += 1
                arrivals.broadcast()
                let deadline = Date() + TimeInterval(hangGuard.components.seconds)
                while arrived < 20 {
                    guard arrivals.wait(until: deadline) else { return .json(504, "{}") }
                }
                return .json(200, "{}")
            }
            let statuses = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        (try? await transport.send(
                            HTTPRequest(.get, "http://127.0.0.1:\(server.port)/all"),
                            timeout: hangGuard,
                            maximumBodyBytes: Self.limit
                        ).status) ?? 0
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 20))
        }
    }
}
