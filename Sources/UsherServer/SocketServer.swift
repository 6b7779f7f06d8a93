import Foundation
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

/// `[limits]`: what one connection, and all of them together, may cost.
package struct ServerLimits: Sendable, Hashable {
    /// The longest request line, not counting its terminator.
    package var maximumLineBytes = 65_536
    /// The deepest nesting of arrays and objects in a request.
    package var maximumJSONDepth = 64
    /// Connections beyond this many get `too_many_connections` and are closed.
    package var maximumConnections = 1024
    /// A connection that is not subscribed and sends nothing for this long is closed.
    package var idleTimeout: TimeAmount = .minutes(5)
    /// Output a connection may leave unsent (a subscriber that stops reading) before it is disconnected.
    package var maximumPendingBytes = 1_048_576

    package init() {}
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

    /// Adds a connection; returns how many there are now.
    func add(_ channel: any Channel) -> Int {
        self.channels.withLock {
            $0[ObjectIdentifier(channel)] = channel
            return $0.count
        }
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

    /// A connection as the listener hands it over.
    private struct Accepted: Sendable {
        var connection: Connection
        var peer: PeerCredentials
        var subscribed: SubscribedFlag
    }

    private let listener: NIOAsyncChannel<Accepted, Never>
    private let dispatcher: Dispatcher
    private let tracker: ConnectionTracker
    private let logger: Logger
    package let address: ListenAddress

    private init(
        listener: NIOAsyncChannel<Accepted, Never>,
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
            // Bursts of clients (every program on the device asking at once) queue here rather than fail with EAGAIN.
            .serverChannelOption(.backlog, value: 4096)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let settings = dispatcher.settings
        let initializer: @Sendable (any Channel) -> EventLoopFuture<Accepted> = { channel in
            Self.peerCredentials(of: channel).flatMapThrowing { peer in
                let limits = settings.limits
                let subscribed = SubscribedFlag()
                let operations = channel.pipeline.syncOperations
                try operations.addHandler(IdleStateHandler(readTimeout: limits.idleTimeout))
                try operations.addHandler(IdleConnectionCloser(subscribed: subscribed))
                try operations.addHandler(
                    ByteToMessageHandler(LineFrameDecoder(maximumLineLength: limits.maximumLineBytes))
                )
                try operations.addHandler(MessageToByteHandler(LineFrameEncoder()))
                let connection = try Connection(
                    wrappingChannelSynchronously: channel,
                    configuration: .init(isOutboundHalfClosureEnabled: false)
                )
                return Accepted(connection: connection, peer: peer, subscribed: subscribed)
            }
        }
        let listener: NIOAsyncChannel<Accepted, Never>
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
        let credentials: EventLoopFuture<KernelPeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        return credentials.flatMap { credentials in
            let groups: EventLoopFuture<PeerGroups> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET),
                name: SocketOptionName(SO_PEERGROUPS)
            )
            return groups.map { Optional($0) }.recover { _ in nil }.map { groups in
                PeerCredentials(
                    uid: credentials.uid,
                    gid: credentials.gid,
                    pid: credentials.pid,
                    groups: groups?.list ?? PeerGroups.fromProcfs(pid: credentials.pid)
                )
            }
        }
    }

    /// `struct ucred` from `<sys/socket.h>` (hidden behind `_GNU_SOURCE` in the Glibc module): the same three
    /// 32-bit fields in the same order.
    private struct KernelPeerCredentials: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// The buffer for `SO_PEERGROUPS`: up to 128 supplementary groups (more make the call fail with ERANGE, and
    /// the groups are read from `/proc` instead). NIO zero-fills the buffer and the kernel returns the groups sorted
    /// in ascending order, so the list ends at the last non-zero entry. (A peer whose only supplementary group is
    /// gid 0 is therefore seen without it; its primary group still counts.)
    private struct PeerGroups: Sendable {
        typealias Eight = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)
        var storage:
            (
                Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight,
                Eight
            ) =
                (
                    (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0),
                    (0, 0, 0, 0, 0, 0, 0, 0)
                )

        var list: [UInt32] {
            withUnsafeBytes(of: self.storage) { raw in
                let gids = Array(raw.bindMemory(to: UInt32.self))
                guard let last = gids.lastIndex(where: { $0 != 0 }) else { return [] }
                return Array(gids[...last])
            }
        }

        /// The `Groups:` line of `/proc/PID/status`, for peers with more groups than the buffer holds.
        static func fromProcfs(pid: Int32) -> [UInt32] {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Groups:") })
            else { return [] }
            return line.dropFirst("Groups:".count).split(whereSeparator: { $0 == " " || $0 == "\t" })
                .compactMap { UInt32($0) }
        }
    }

    package func run() async throws {
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await self.listener.executeThenClose { inbound in
                    for try await accepted in inbound {
                        group.addTask { await self.serve(accepted) }
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

    /// The peer's executable, for audit records; nil when `/proc/PID/exe` cannot be read (another user's process
    /// under `ProtectProc=invisible`, or the process is gone).
    private static func executable(of pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private func serve(_ accepted: Accepted) async {
        let connection = accepted.connection
        let peer = accepted.peer
        let channel = connection.channel
        let count = self.tracker.add(channel)
        defer { self.tracker.remove(channel) }
        var logger = self.logger
        logger[metadataKey: "peer.uid"] = "\(peer.uid)"
        logger[metadataKey: "peer.pid"] = "\(peer.pid)"
        let limits = self.dispatcher.settings.limits
        guard count <= limits.maximumConnections else {
            logger.warning(
                "too many connections; refusing one",
                metadata: ["connections": "\(count - 1)", "limit": "\(limits.maximumConnections)"]
            )
            try? await connection.executeThenClose { _, outbound in
                try await outbound.write(
                    LineCodec.encodeError(
                        id: nil,
                        ResponseError(
                            .tooManyConnections,
                            "usherd serves \(limits.maximumConnections) connections at most"
                        )
                    )
                )
            }
            return
        }
        let context = Dispatcher.Context(
            peer: peer,
            permissions: self.dispatcher.settings.policy.permissions(for: peer),
            executable: Self.executable(of: peer.pid),
            logger: logger,
            close: { channel.close(promise: nil) }
        )
        let events = self.dispatcher.registry.events
        do {
            try await connection.executeThenClose { inbound, outbound in
                try await withThrowingDiscardingTaskGroup { group in
                    var subscriptionID: UInt64?
                    defer { subscriptionID.map(events.cancel) }
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
                            if let previous = subscriptionID { events.cancel(previous) }
                            subscriptionID = subscription.id
                            accepted.subscribed.value = true
                            try await outbound.write(bytes)
                            group.addTask {
                                for await line in subscription.lines {
                                    try await outbound.write(line)
                                    events.acknowledge(subscription.id, byteCount: line.count)
                                }
                            }
                        }
                    }
                    // The peer closed its side (or the daemon is stopping): end the subscription, which ends the
                    // forwarding task, so the connection closes.
                    subscriptionID.map(events.cancel)
                    subscriptionID = nil
                }
            }
        } catch {
            logger.debug("connection ended with an error", metadata: ["error": "\(error)"])
        }
    }

}

/// Whether a connection is subscribed: subscribed connections are exempt from the idle timeout.
final class SubscribedFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    var value: Bool {
        get { self.flag.load(ordering: .relaxed) }
        set { self.flag.store(newValue, ordering: .relaxed) }
    }
}

/// Closes a connection that has sent nothing for `limits.idle_timeout`, unless it is subscribed.
final class IdleConnectionCloser: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let subscribed: SubscribedFlag

    init(subscribed: SubscribedFlag) {
        self.subscribed = subscribed
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read, !self.subscribed.value {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
