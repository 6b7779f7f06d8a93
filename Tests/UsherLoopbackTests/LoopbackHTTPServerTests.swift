import Testing
import UsherLoopback
import UsherLoopbackServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The browser login's one-shot server, driven by a plain blocking client socket as a browser would.
@Suite(.timeLimit(.minutes(1)))
struct LoopbackHTTPServerTests {
    struct Refused: Error {}

    /// Answers `/callback?code=...` with the code, anything else with 404 and keeps waiting.
    static func start(port: Int = 0) async throws -> LoopbackHTTPServer {
        try await LoopbackHTTPServer.start(host: "127.0.0.1", port: port) { method, target in
            guard method == "GET", target.hasPrefix("/callback?code=") else {
                return .init(status: 404, html: "Not found.")
            }
            let code = String(target.dropFirst("/callback?code=".count))
            return .init(
                status: 200,
                html: "done",
                outcome: code == "refuse" ? .failure(Refused()) : .success(code)
            )
        }
    }

    /// Connects to 127.0.0.1:`port`, sends `request` and reads until the server closes the connection.
    static func exchange(_ request: String, port: Int) -> String {
        let descriptor = Self.connect(port: port)
        defer { close(descriptor) }
        var bytes = Array(request.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { break }
            bytes = bytes.dropFirst(written)
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received.append(contentsOf: chunk[..<count])
        }
        return String(decoding: received, as: UTF8.self)
    }

    static func connect(port: Int) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        address.sin_port = UInt16(port).bigEndian
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return descriptor
    }

    @Test func otherRequestsAreAnsweredAndTheCallbackEndsTheWait() async throws {
        let server = try await Self.start()
        let port = try #require(server.port)
        // A connection that sends nothing (a browser's preconnection) holds nothing up.
        let idle = Self.connect(port: port)
        defer { close(idle) }
        let favicon = Self.exchange("GET /favicon.ico HTTP/1.1\r\nHost: localhost\r\n\r\n", port: port)
        #expect(favicon.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        #expect(favicon.contains("Connection: close"))
        let malformed = Self.exchange("NOT HTTP AT ALL\r\n\r\n", port: port)
        #expect(malformed.hasPrefix("HTTP/1.1 400 Bad Request"))
        let callback = Self.exchange("GET /callback?code=abc HTTP/1.1\r\nHost: localhost\r\n\r\n", port: port)
        #expect(callback.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(callback.hasSuffix("done"))
        #expect(try await server.outcome(within: .seconds(60)) == "abc")
        await server.close()
    }

    @Test func anErrorOutcomeIsThrownAndTheWaitTimesOut() async throws {
        let refusing = try await Self.start()
        _ = Self.exchange("GET /callback?code=refuse HTTP/1.1\r\n\r\n", port: try #require(refusing.port))
        await #expect(throws: Refused.self) { try await refusing.outcome(within: .seconds(60)) }
        await refusing.close()

        let waiting = try await Self.start()
        await #expect(throws: LoopbackHTTPServer.TimedOut.self) { try await waiting.outcome(within: .milliseconds(50)) }
        await waiting.close()
    }

    @Test func aPortInUseIsReportedAsSuch() async throws {
        let first = try await Self.start()
        let port = try #require(first.port)
        await #expect {
            try await Self.start(port: port)
        } throws: { error in
            (error as? LoopbackSocket.BindError)?.inUse == true
        }
        await first.close()
        let free = try #require(await LoopbackSocket.freePort(host: "127.0.0.1"))
        #expect(free > 0)
    }
}
