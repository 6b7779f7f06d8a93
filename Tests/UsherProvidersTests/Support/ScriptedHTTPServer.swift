import Foundation
import Synchronization
import UsherTestSupport

/// A scripted HTTP/1.1 server on 127.0.0.1 standing in for an OpenID provider, for the error shapes a real server
/// never produces: malformed JSON, 5xx, 429, stalls, garbage instead of HTTP.
///
/// Each path has a handler that sees the request (method, path, headers, form body) and picks the reply. Every
/// connection gets a thread of its own (the cooperative pool is never blocked), answers one request and closes.
final class ScriptedHTTPServer: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var query: [String: String]
        var headers: [String: String]
        var form: [String: String]
    }

    enum Reply: Sendable {
        case json(Int, String)
        case status(Int, contentType: String, body: String)
        /// Any status, with headers of the test's own besides `Content-Length` and `Connection: close`.
        case response(Int, headers: [(String, String)], body: String)
        /// Accepts the request and never answers (until the client gives up).
        case stall
        /// Bytes that are not an HTTP response.
        case garbage
    }

    typealias Handler = @Sendable (Request) -> Reply

    private struct State {
        /// When set, every connection gets these bytes at once, whatever it sends (a server that speaks plain HTTP
        /// to a TLS client).
        var immediateReply: [UInt8]?
        var handlers: [String: Handler] = [:]
        var requests: [Request] = []
        var stopped = false
        var open: Set<Int32> = []
    }

    let port: Int
    private let listener: Int32
    private let state = Mutex(State())

    init() throws {
        (self.listener, self.port) = try bindLoopbackSocket(listenBacklog: 64)
        let thread = Thread { [self] in self.acceptLoop() }
        thread.start()
    }

    var base: String { "http://127.0.0.1:\(self.port)" }

    /// Sets the handler of `path` (without query).
    func handle(_ path: String, _ handler: @escaping Handler) {
        self.state.withLock { $0.handlers[path] = handler }
    }

    /// Answers every connection at once with `bytes`, without reading the request.
    func replyImmediately(_ bytes: [UInt8]) {
        self.state.withLock { $0.immediateReply = bytes }
    }

    /// Every request so far, in order.
    var requests: [Request] { self.state.withLock { $0.requests } }

    func requests(to path: String) -> [Request] { self.requests.filter { $0.path == path } }

    /// Stops accepting and closes every open connection; the port then refuses connections.
    func stop() {
        let open = self.state.withLock { state in
            state.stopped = true
            return state.open
        }
        shutdown(self.listener, Int32(SHUT_RDWR))
        for descriptor in open { shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let client = accept(self.listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            let accepted = self.state.withLock { state in
                guard !state.stopped else { return false }
                state.open.insert(client)
                return true
            }
            guard accepted else {
                close(client)
                continue
            }
            Thread { [self] in
                self.answer(client)
                self.state.withLock { _ = $0.open.remove(client) }
                close(client)
            }
            .start()
        }
        close(self.listener)
    }

    private func answer(_ client: Int32) {
        if let bytes = self.state.withLock({ $0.immediateReply }) {
            Self.send(client, bytes)
            return
        }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let request = Self.read(client) else { return }
        let handler = self.state.withLock { state in
            state.requests.append(request)
            return state.handlers[request.path]
        }
        let reply = handler?(request) ?? .json(404, #"{"error":"not_found"}"#)
        switch reply {
        case .json(let status, let body):
            Self.write(client, status: status, contentType: "application/json", body: body)
        case .status(let status, let contentType, let body):
            Self.write(client, status: status, contentType: contentType, body: body)
        case .response(let status, let headers, let body):
            Self.write(client, status: status, headers: headers, body: body)
        case .stall:
            // Wait until the client hangs up (or the server stops).
            var byte: UInt8 = 0
            while recv(client, &byte, 1, 0) > 0 {}
        case .garbage:
            Self.send(client, Array("\u{16}\u{03}\u{01} this is not HTTP at all\r\n\r\n".utf8))
        }
    }

    private static func read(_ client: Int32) -> Request? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        var headerEnd: Int?
        while headerEnd == nil, data.count < 65_536 {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            data.append(contentsOf: buffer[..<count])
            headerEnd = Self.find(Array("\r\n\r\n".utf8), in: data)
        }
        guard let headerEnd else { return nil }
        let head = String(decoding: data[..<headerEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let words = head[0].split(separator: " ")
        guard words.count == 3 else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces
            )
        }
        var body = Array(data[(headerEnd + 4)...])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while body.count < length {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            body.append(contentsOf: buffer[..<count])
        }
        let target = String(words[1])
        let components = URLComponents(string: "http://localhost" + target)
        return Request(
            method: String(words[0]),
            path: components?.path ?? target,
            query: Self.pairs(components?.percentEncodedQuery ?? ""),
            headers: headers,
            form: Self.pairs(String(decoding: body, as: UTF8.self))
        )
    }

    /// Decodes `a=b&c=d` (form encoding: `+` is a space).
    static func pairs(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (part: Substring) in
                part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part)
            }
            result[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return result
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where Array(haystack[start..<(start + needle.count)]) == needle
        {
            return start
        }
        return nil
    }

    private static func write(_ client: Int32, status: Int, contentType: String, body: String) {
        self.write(client, status: status, headers: [("Content-Type", contentType)], body: body)
    }

    private static func write(_ client: Int32, status: Int, headers: [(String, String)], body: String) {
        let bytes = Array(body.utf8)
        let head =
            "HTTP/1.1 \(status) Status\r\n" + headers.map { "\($0.0): \($0.1)\r\n" }.joined()
            + "Content-Length: \(bytes.count)\r\nConnection: close\r\n\r\n"
        self.send(client, Array(head.utf8) + bytes)
    }

    private static func send(_ client: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { return }
            offset += sent
        }
    }
}
