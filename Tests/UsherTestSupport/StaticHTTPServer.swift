import Foundation
import Synchronization

/// A tiny HTTP/1.1 file server on 127.0.0.1 and a free port, for tests that need a JWK set URL.
///
/// It serves the files of one directory (the test rewrites them to rotate keys), answers one request per
/// connection (`Connection: close`), and records the paths asked for. It runs on a thread of its own, so it never
/// occupies the cooperative pool; `stop()` ends it, after which the port refuses connections.
package final class StaticHTTPServer: Sendable {
    private struct State {
        var requests: [String] = []
        var finished = false
        var stopped = false
    }

    package let port: Int
    package let directory: String
    private let listener: Int32
    private let state = Mutex(State())

    package init(directory: String) throws {
        self.directory = directory
        (self.listener, self.port) = try bindLoopbackSocket(listenBacklog: 16)
        let thread = Thread { [self] in self.serve() }
        thread.name = "test-http-server"
        thread.start()
    }

    /// `http://127.0.0.1:PORT/path`.
    package func url(_ path: String) -> String { "http://127.0.0.1:\(self.port)/\(path)" }

    /// The paths requested so far, in order.
    package var requests: [String] { self.state.withLock { $0.requests } }

    /// Stops accepting, waits for the serving thread to end, and closes the port. Calling it again does nothing.
    package func stop() async {
        let first = self.state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        shutdown(self.listener, Int32(SHUT_RDWR))
        let deadline = ContinuousClock.now + hangGuard
        while !self.state.withLock({ $0.finished }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        close(self.listener)
    }

    private func serve() {
        while true {
            let client = accept(self.listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            self.answer(client)
            close(client)
        }
        self.state.withLock { $0.finished = true }
    }

    private func answer(_ client: Int32) {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while request.count < 16_384, !request.ends(with: Array("\r\n\r\n".utf8)) {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            request.append(contentsOf: buffer[..<count])
        }
        let firstLine = String(decoding: request.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
        let words = firstLine.split(separator: " ")
        guard words.count == 3, words[0] == "GET" else {
            return self.respond(client, status: "405 Method Not Allowed", body: [])
        }
        let path = String(words[1].prefix { $0 != "?" })
        self.state.withLock { $0.requests.append(path) }
        guard !path.contains(".."),
            let contents = FileManager.default.contents(atPath: self.directory + path)
        else { return self.respond(client, status: "404 Not Found", body: []) }
        self.respond(client, status: "200 OK", body: Array(contents))
    }

    private func respond(_ client: Int32, status: String, body: [UInt8]) {
        let head =
            "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
            + "Connection: close\r\n\r\n"
        let bytes = Array(head.utf8) + body
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            offset += sent
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        self.count >= suffix.count && Array(self.suffix(suffix.count)) == suffix
    }
}
