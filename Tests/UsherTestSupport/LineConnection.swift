import Foundation
import UsherProtocol

/// A raw NDJSON connection over a Unix socket, for tests that speak the protocol byte for byte.
///
/// Blocking with bounded waits: every read gives up after `timeout`, so a daemon that does not answer fails the test
/// instead of hanging it.
package final class LineConnection {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var nextID = 0
    package var timeout: Duration = hangGuard

    package convenience init(path: String) throws {
        self.init(adopting: try Self.connectedDescriptor(path: path))
    }

    /// Wraps a connected socket (made by `connectedDescriptor`, possibly on another thread with other credentials:
    /// see `OtherUser`); the connection owns it from now on.
    package init(adopting descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// A new socket connected to `path`. The kernel records the credentials of the calling thread as the peer's.
    package static func connectedDescriptor(path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw TestSupportError("connect \(path): \(reason)")
        }
        return descriptor
    }

    deinit { Glibc.close(self.descriptor) }

    /// Shrinks the kernel's receive buffer, so that a test can make the daemon's output back up quickly.
    package func shrinkReceiveBuffer() {
        var size: Int32 = 1024
        _ = setsockopt(self.descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    package func close() {
        shutdown(self.descriptor, Int32(SHUT_RDWR))
    }

    /// Closes the sending side only (what `socat` does at the end of its input).
    package func closeWrite() {
        shutdown(self.descriptor, Int32(SHUT_WR))
    }

    package func send(raw bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(self.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw TestSupportError("send: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    package func send(_ line: String) throws {
        try self.send(raw: Array((line + "\n").utf8))
    }

    /// The next line the daemon sent, or nil when it closed the connection.
    ///
    /// Waits without blocking a thread of the cooperative pool (see `awaitInput`), so that tests waiting on the
    /// daemon never starve other tests of it.
    package func readLine() async throws -> String? {
        try await self.readMessage(terminator: UInt8(ascii: "\n"))
    }

    /// The next message ending in `terminator` (a newline, or a NUL on the Varlink socket), without it; nil when the
    /// daemon closed the connection.
    package func readMessage(terminator: UInt8) async throws -> String? {
        let deadline = ContinuousClock.now + self.timeout
        // Where the search for the newline resumes: a line of megabytes arrives in many chunks, and each is searched
        // once.
        var scanned = 0
        while true {
            if let newline = self.buffer[scanned...].firstIndex(of: terminator) {
                let line = String(decoding: self.buffer[..<newline], as: UTF8.self)
                self.buffer.removeSubrange(...newline)
                return line
            }
            scanned = self.buffer.count
            try await self.awaitInput(until: deadline, waitingFor: "line")
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(self.descriptor, $0.baseAddress, $0.count, 0) }
            if count == 0 { return nil }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                if errno == ECONNRESET { return nil }
                throw TestSupportError("recv: \(String(cString: strerror(errno)))")
            }
            self.buffer.append(contentsOf: chunk[..<count])
        }
    }

    /// Waits until usherd has sent something not read yet, without reading it: the start of an answer too long for the
    /// socket's buffers, which the daemon is then still writing.
    package func waitUntilReadable() async throws {
        guard self.buffer.isEmpty else { return }
        try await self.awaitInput(until: ContinuousClock.now + self.timeout, waitingFor: "input")
    }

    /// Returns once the socket has input (or the peer closed it), throwing at `deadline` (a hang guard), without
    /// blocking a thread of the cooperative pool (`awaitReadable`).
    private func awaitInput(until deadline: ContinuousClock.Instant, waitingFor what: String) async throws {
        guard await awaitReadable(self.descriptor, until: deadline) else {
            throw TestSupportError("no \(what) from usherd within \(self.timeout)")
        }
    }

    /// A complete line if one has arrived, without waiting; nil when none has (yet). Throws when the daemon closed
    /// the connection.
    package func pollObject() throws -> [String: JSONValue]? {
        while self.buffer.firstIndex(of: UInt8(ascii: "\n")) == nil {
            var poller = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(self.descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw TestSupportError("usherd closed the connection") }
            self.buffer.append(contentsOf: chunk[..<count])
        }
        let newline = self.buffer.firstIndex(of: UInt8(ascii: "\n"))!
        let line = Data(self.buffer[..<newline])
        self.buffer.removeSubrange(...newline)
        guard case .object(let object) = try JSONDecoder().decode(JSONValue.self, from: line) else {
            throw TestSupportError("not a JSON object")
        }
        return object
    }

    /// The next line, parsed as a JSON object.
    package func readObject() async throws -> [String: JSONValue] {
        guard let line = try await self.readLine() else { throw TestSupportError("usherd closed the connection") }
        guard case .object(let object) = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)) else {
            throw TestSupportError("not a JSON object: \(line)")
        }
        return object
    }

    /// Sends a request and returns its whole response object (`id` plus `result` or `error`). Events that arrive
    /// first are collected in `pendingEvents`.
    package var pendingEvents: [[String: JSONValue]] = []

    @discardableResult
    package func call(_ method: String, _ params: [String: JSONValue]? = nil) async throws -> [String: JSONValue] {
        self.nextID += 1
        var request: [String: JSONValue] = ["id": .int(Int64(self.nextID)), "method": .string(method)]
        if let params { request["params"] = .object(params) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try self.send(String(decoding: try encoder.encode(JSONValue.object(request)), as: UTF8.self))
        while true {
            let object = try await self.readObject()
            if object["event"] != nil {
                self.pendingEvents.append(object)
                continue
            }
            guard object["id"] == .int(Int64(self.nextID)) else {
                throw TestSupportError("response id \(String(describing: object["id"])) does not match \(self.nextID)")
            }
            return object
        }
    }

    /// Like `call`, but returns the `result` and fails the test on an error response.
    package func result(_ method: String, _ params: [String: JSONValue]? = nil) async throws -> JSONValue {
        let response = try await self.call(method, params)
        guard let result = response["result"] else {
            throw TestSupportError("\(method) failed: \(String(describing: response["error"]))")
        }
        return result
    }

    /// Like `call`, but expects an error and returns its code.
    package func errorCode(_ method: String, _ params: [String: JSONValue]? = nil) async throws -> String? {
        let response = try await self.call(method, params)
        return response["error"]?.objectValue?["code"]?.stringValue
    }

    /// The next event (already received or still to come).
    package func nextEvent() async throws -> [String: JSONValue] {
        if !self.pendingEvents.isEmpty { return self.pendingEvents.removeFirst() }
        let object = try await self.readObject()
        guard object["event"] != nil else { throw TestSupportError("expected an event, got \(object)") }
        return object
    }
}

extension JSONValue {
    /// `value["a"]["b"]`-style access for tests.
    package subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    package var intValue: Int64? {
        if case .int(let value) = self { return value }
        return nil
    }

    package var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    package var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}
