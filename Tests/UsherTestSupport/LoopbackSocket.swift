import Foundation

/// A TCP socket bound to 127.0.0.1 on a free port the kernel picks, listening when `backlog` is given (a socket that
/// is bound but never listens refuses connections, and keeps the port from being taken). Returns the descriptor and
/// the port.
package func bindLoopbackSocket(listenBacklog backlog: Int32?) throws -> (descriptor: Int32, port: Int) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0, backlog.map({ listen(descriptor, $0) == 0 }) ?? true else {
        let reason = String(cString: strerror(errno))
        close(descriptor)
        throw TestSupportError("bind/listen on 127.0.0.1: \(reason)")
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}
