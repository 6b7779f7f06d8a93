import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The loopback socket of the browser login's redirect (RFC 8252 §7.3), set up in one place for both ends: the
/// daemon, which picks a free port for a redirect URI configured with port 0, and the CLI, which listens on it.
package enum LoopbackSocket {
    /// Why a loopback port could not be bound.
    package struct BindError: Error, CustomStringConvertible {
        /// Another socket holds the port (`EADDRINUSE`): the daemon picked a port that was taken meanwhile.
        package var inUse: Bool
        package var description: String
    }

    /// The loopback address for `host`: `::1` for an IPv6 host (`::1`, `[::1]`), else `127.0.0.1` (also for
    /// `localhost`, which RFC 8252 §8.3 advises against resolving). Never an address another machine can reach.
    package static func address(host: String, port: Int) throws -> SocketAddress {
        try SocketAddress(ipAddress: host.contains(":") ? "::1" : "127.0.0.1", port: port)
    }

    /// Binds and listens on `host`'s loopback address at `port` (0: a port the kernel picks) with `bootstrap`.
    ///
    /// `SO_REUSEADDR` is set, so a port a previous login left in `TIME_WAIT` can be bound again at once.
    package static func bind(
        _ bootstrap: ServerBootstrap,
        host: String,
        port: Int
    ) async throws(BindError) -> any Channel {
        do {
            let address = try Self.address(host: host, port: port)
            return try await bootstrap.serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(to: address).get()
        } catch let error as IOError {
            throw BindError(
                inUse: error.errnoCode == EADDRINUSE,
                description: "cannot listen on \(host):\(port): \(error.description)"
            )
        } catch {
            throw BindError(inUse: false, description: "cannot listen on \(host):\(port): \(error)")
        }
    }

    /// A port that was free a moment ago on `host`'s loopback address: the kernel picks it for a socket bound to
    /// port 0, which is closed again. The client binds it next; in the unlikely case that another process took it
    /// meanwhile, the client asks for a new login.
    package static func freePort(host: String) async -> Int? {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        guard let channel = try? await Self.bind(bootstrap, host: host, port: 0) else { return nil }
        let port = channel.localAddress?.port
        try? await channel.close()
        return port.flatMap { $0 == 0 ? nil : $0 }
    }
}
