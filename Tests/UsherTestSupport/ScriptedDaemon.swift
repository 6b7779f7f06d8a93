import Foundation
import UsherProtocol

/// A stand-in for usherd that answers each method with a fixed result, for CLI tests that need answers the real
/// daemon refuses to give (an email with an escape sequence, a seat name with a line feed): they show that the CLI
/// does not pass such text through even if a daemon sent it.
///
/// It serves one connection at a time on a thread of its own, answers every request with the result scripted for its
/// method (`internal` for any other method). After `subscribe` it sends `events`, answers the next request (the
/// CLI's `list_users`) and closes the connection, which ends `usher watch`. It is not a daemon: no permissions, no
/// state.
package final class ScriptedDaemon: Sendable {
    package let socketPath: String
    private let directory: TestDirectory
    private let descriptor: Int32

    /// - Parameters:
    ///   - answers: the result of each method, by method name (`list_users`, `status`, ...).
    ///   - events: what `subscribe` is followed by.
    package init(answers: [String: any Encodable & Sendable], events: [Event] = []) throws {
        let directory = try TestDirectory()
        let socketPath = directory.file("s.sock")
        self.directory = directory
        self.socketPath = socketPath
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in socketPath.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw TestSupportError("bind/listen \(socketPath): \(reason)")
        }
        self.descriptor = descriptor
        let eventLines = events.flatMap { LineCodec.encode($0) }
        let thread = Thread {
            while true {
                let connection = accept(descriptor, nil, nil)
                guard connection >= 0 else {
                    if errno == EINTR { continue }
                    // Closed here, not in `stop`: its number cannot be reused by another test's socket while this
                    // thread may still call `accept` on it.
                    Glibc.close(descriptor)
                    return
                }
                Self.serve(connection, answers: answers, events: eventLines)
                Glibc.close(connection)
            }
        }
        thread.start()
    }

    /// Stops accepting (the thread's `accept` fails from now on, and the thread closes the socket and ends) and
    /// removes the socket's directory.
    package func stop() {
        shutdown(self.descriptor, Int32(SHUT_RDWR))
        self.directory.remove()
    }

    private static func serve(
        _ connection: Int32,
        answers: [String: any Encodable & Sendable],
        events: [UInt8]
    ) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var subscribed = false
        while true {
            while let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<end])
                buffer.removeSubrange(...end)
                guard let request = try? LineCodec.decodeRequest(line) else { return }
                let answer =
                    answers[request.method].map { LineCodec.encodeResult(id: request.id, $0) }
                    ?? LineCodec.encodeError(id: request.id, ResponseError(.internal, "not scripted"))
                guard self.write(answer, to: connection), !subscribed else { return }
                if request.method == Method.subscribe.rawValue {
                    subscribed = true
                    guard self.write(events, to: connection) else { return }
                }
            }
            let count = read(connection, &chunk, chunk.count)
            guard count > 0 else { return }
            buffer += chunk[..<count]
        }
    }

    private static func write(_ bytes: [UInt8], to connection: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}
