import Foundation

/// A stand-in for systemd's notification socket: a datagram socket the daemon's `sd_notify` writes to.
package final class NotifyListener {
    private let descriptor: Int32
    /// The value for `NOTIFY_SOCKET`: a path, or `@name` for an abstract socket.
    package let address: String
    private var pending: [String] = []

    /// - Parameter abstractName: listen on the abstract socket `@abstractName` instead of the path.
    package init(path: String, abstractName: String? = nil) throws {
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes: [UInt8] = abstractName.map { [0] + Array($0.utf8) } ?? Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstractName == nil ? 1 : 0))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw TestSupportError("bind notify socket: \(reason)")
        }
        self.descriptor = descriptor
        self.address = abstractName.map { "@" + $0 } ?? path
    }

    deinit { close(self.descriptor) }

    /// The next notification (one datagram, possibly several `KEY=value` lines), or nil after `timeout`.
    package func next(timeout: Duration = hangGuard) async throws -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes {
                recv(self.descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if count > 0 { return String(decoding: buffer[..<count], as: UTF8.self) }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    /// Waits for a notification containing `field` (such as `READY=1`), returning it and everything before it.
    package func waitFor(
        _ field: String,
        timeout: Duration = hangGuard
    ) async throws -> (match: String, before: [String]) {
        var before: [String] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let message = try await self.next(timeout: deadline - ContinuousClock.now) else { break }
            if message.split(separator: "\n").contains(where: { $0 == field || $0.hasPrefix(field) }) {
                return (message, before)
            }
            before.append(message)
        }
        throw TestSupportError("no notification with \(field) within \(timeout); saw \(before)")
    }
}
