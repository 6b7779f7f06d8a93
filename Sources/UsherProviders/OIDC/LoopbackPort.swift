#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Finding a free TCP port on a loopback address, for a redirect URI configured with port 0.
enum LoopbackPort {
    /// A port that was free a moment ago on `host` (`127.0.0.1`, `::1` or `localhost`): the kernel picks it for a
    /// socket bound to port 0, which is closed again. The client binds it next; in the unlikely case that another
    /// process took it meanwhile, the client asks for a new login.
    static func free(host: String) -> Int? {
        let isIPv6 = host == "::1"
        let descriptor = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            address.sin6_port = 0
            return Self.bindAndRead(descriptor, &address)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        address.sin_port = 0
        return Self.bindAndRead(descriptor, &address)
    }

    private static func bindAndRead<Address>(_ descriptor: Int32, _ address: inout Address) -> Int? {
        let length = socklen_t(MemoryLayout<Address>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else { return nil }
        var actual = address
        var actualLength = length
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &actualLength) }
        }
        guard named == 0 else { return nil }
        // sin_port and sin6_port sit at the same offset (2), in network byte order.
        let port = withUnsafeBytes(of: &actual) { UInt16($0[2]) << 8 | UInt16($0[3]) }
        return port == 0 ? nil : Int(port)
    }
}
