import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import UsherCore
import UsherFraming
import UsherProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Where the server listens.
package enum ListenAddress: Sendable, Hashable {
    /// Bind a new socket at `path` with file mode `mode`.
    case path(String, mode: UInt32)
    /// Serve an already listening socket handed over by systemd (socket activation).
    case inherited(descriptor: CInt, path: String?)

    package var displayPath: String {
        switch self {
        case .path(let path, _): path
        case .inherited(let descriptor, let path): path ?? "inherited fd \(descriptor)"
        }
    }
}

package struct ServerLimits: Sendable, Hashable {
    package var maximumLineBytes: Int
    package var maximumJSONDepth: Int

    package init(maximumLineBytes: Int = 65_536, maximumJSONDepth: Int = 64) {
        self.maximumLineBytes = maximumLineBytes
        self.maximumJSONDepth = maximumJSONDepth
    }
}

package enum ServerError: Error, CustomStringConvertible {
    case socketInUse(String)
    case notASocket(String)
    case cannotPrepare(path: String, reason: String)

    package var description: String {
        switch self {
        case .socketInUse(let path): "another daemon is already listening on \(path)"
        case .notASocket(let path): "\(path) exists and is not a socket; refusing to replace it"
        case .cannotPrepare(let path, let reason): "cannot listen on \(path): \(reason)"
        }
    }
}

/// The live connections, for `status` and for closing them at shutdown.
package final class ConnectionTracker: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    package init() {}

    package var count: Int { self.channels.withLock { $0.count } }

    func add(_ channel: any Channel) {
        self.channels.withLock { $0[ObjectIdentifier(channel)] = channel }
    }

    func remove(_ channel: any Channel) {
        _ = self.channels.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Stops reading on every connection: each finishes the request in hand, answers it, and closes.
    func closeInputs() {
        for channel in self.channels.withLock({ Array($0.values) }) {
            channel.close(mode: .input, promise: nil)
        }
    }
}

/// The Unix-socket server: newline-delimited JSON in, one response per request out, events to subscribers.
///
/// Framing happens in channel handlers; everything else in async code over `NIOAsyncChannel`. One task per
/// connection (plus one while it is subscribed) in a discarding task group; requests on a connection are answered
/// in order, connections run concurrently, and a failing connection never stops the server.
package final class SocketServer: Service {
    private typealias Connection = NIOAsyncChannel<LineFrame, [UInt8]>

    private let listener: NIOAsyncChannel<(Connection, PeerCredentials), Never>
    private let dispatcher: Dispatcher
    private let tracker: ConnectionTracker
    private let logger: Logger
    package let address: ListenAddress

    private init(
        listener: NIOAsyncChannel<(Connection, PeerCredentials), Never>,
        address: ListenAddress,
        dispatcher: Dispatcher,
        tracker: ConnectionTracker,
        logger: Logger
    ) {
        self.listener = listener
        self.address = address
        self.dispatcher = dispatcher
        self.tracker = tracker
        self.logger = logger
    }

    /// Binds (or adopts) the listening socket. Errors here are startup errors: nothing is served yet.
    package static func bind(
        _ address: ListenAddress,
        dispatcher: Dispatcher,
        tracker: ConnectionTracker,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) async throws -> SocketServer {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let settings = dispatcher.settings
        let initializer: @Sendable (any Channel) -> EventLoopFuture<(Connection, PeerCredentials)> = { channel in
            Self.peerCredentials(of: channel).flatMapThrowing { peer in
                let maximumLineBytes = settings.limits.maximumLineBytes
                try channel.pipeline.syncOperations.addHandler(
                    ByteToMessageHandler(LineFrameDecoder(maximumLineLength: maximumLineBytes))
                )
                try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(LineFrameEncoder()))
                let connection = try Connection(
                    wrappingChannelSynchronously: channel,
                    configuration: .init(isOutboundHalfClosureEnabled: false)
                )
                return (connection, peer)
            }
        }
        let listener: NIOAsyncChannel<(Connection, PeerCredentials), Never>
        switch address {
        case .path(let path, let mode):
            try Self.prepareSocketPath(path)
            // The socket node is created by bind(2) with the process umask: make it private from the first
            // instant, then give it the configured mode.
            let previousMask = umask(0o177)
            defer { umask(previousMask) }
            listener = try await bootstrap.bind(unixDomainSocketPath: path, childChannelInitializer: initializer)
            guard chmod(path, mode_t(mode)) == 0 else {
                let reason = String(cString: strerror(errno))
                try? await listener.channel.close()
                throw ServerError.cannotPrepare(path: path, reason: "chmod: \(reason)")
            }
        case .inherited(let descriptor, _):
            listener = try await bootstrap.bind(descriptor, childChannelInitializer: initializer)
        }
        return SocketServer(
            listener: listener,
            address: address,
            dispatcher: dispatcher,
            tracker: tracker,
            logger: logger
        )
    }

    /// Replaces a stale socket left by a dead daemon; never steals a live one, never deletes a non-socket.
    private static func prepareSocketPath(_ path: String) throws {
        guard path.utf8.count < 108 else {
            throw ServerError.cannotPrepare(path: path, reason: "the path is longer than a Unix socket path may be")
        }
        var info = stat()
        if lstat(path, &info) != 0 {
            if errno != ENOENT {
                throw ServerError.cannotPrepare(path: path, reason: String(cString: strerror(errno)))
            }
            return
        }
        guard info.st_mode & S_IFMT == S_IFSOCK else { throw ServerError.notASocket(path) }
        if Self.isAccepting(path) { throw ServerError.socketInUse(path) }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw ServerError.cannotPrepare(
                path: path,
                reason: "cannot remove stale socket: \(String(cString: strerror(errno)))"
            )
        }
    }

    /// Whether something accepts connections on the socket at `path`.
    private static func isAccepting(_ path: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
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
        return result == 0
    }

    private static func peerCredentials(of channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(PeerCredentials(uid: UInt32.max, gid: UInt32.max, pid: 0))
        }
        return provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        ).map { (credentials: KernelPeerCredentials) in
            PeerCredentials(uid: credentials.uid, gid: credentials.gid, pid: credentials.pid)
        }
    }

    /// `struct ucred` from `<sys/socket.h>` (hidden behind `_GNU_SOURCE` in the Glibc module): the same three
    /// 32-bit fields in the same order.
    private struct KernelPeerCredentials: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    package func run() async throws {
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await self.listener.executeThenClose { inbound in
                    for try await (connection, peer) in inbound {
                        group.addTask { await self.serve(connection, peer: peer) }
                    }
                }
                // No longer accepting. Tell subscribers first (their connections write `daemon_stopping` before they
                // close), then let every connection finish what it is answering, and close.
                await self.dispatcher.registry.announceStopping()
                self.tracker.closeInputs()
            }
        } onGracefulShutdown: {
            self.listener.channel.close(promise: nil)
        }
        if case .path(let path, _) = self.address { unlink(path) }
    }

    private func serve(_ connection: Connection, peer: PeerCredentials) async {
        let channel = connection.channel
        self.tracker.add(channel)
        defer { self.tracker.remove(channel) }
        var logger = self.logger
        logger[metadataKey: "peer.uid"] = "\(peer.uid)"
        logger[metadataKey: "peer.pid"] = "\(peer.pid)"
        let context = Dispatcher.Context(
            peer: peer,
            permissions: self.dispatcher.settings.policy.permissions(for: peer),
            logger: logger
        )
        do {
            try await connection.executeThenClose { inbound, outbound in
                try await withThrowingDiscardingTaskGroup { group in
                    var subscriptionID: UInt64?
                    defer { subscriptionID.map(self.dispatcher.registry.events.cancel) }
                    for try await frame in inbound {
                        guard case .line(let buffer) = frame else {
                            try await outbound.write(
                                LineCodec.encodeError(
                                    id: nil,
                                    ResponseError(
                                        .lineTooLong,
                                        "the line is longer than the limit; closing the connection"
                                    )
                                )
                            )
                            break
                        }
                        let line = buffer.readableBytesView
                        if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
                        switch await self.dispatcher.handle(line: line, context: context) {
                        case .response(let bytes):
                            try await outbound.write(bytes)
                        case .subscribed(let bytes, let subscription):
                            if let previous = subscriptionID { self.dispatcher.registry.events.cancel(previous) }
                            subscriptionID = subscription.id
                            try await outbound.write(bytes)
                            group.addTask {
                                for await event in subscription.events {
                                    try await outbound.write(LineCodec.encode(event))
                                }
                            }
                        }
                    }
                    // The peer closed its side (or the daemon is stopping): end the subscription, which ends the
                    // forwarding task, so the connection closes.
                    subscriptionID.map(self.dispatcher.registry.events.cancel)
                    subscriptionID = nil
                }
            }
        } catch {
            logger.debug("connection ended with an error", metadata: ["error": "\(error)"])
        }
    }
}
