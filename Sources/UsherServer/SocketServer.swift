import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import UsherCore
import UsherFraming
import UsherProtocol

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

/// The Unix-socket server: newline-delimited JSON in, one response per request out, events to subscribers.
///
/// Framing happens in channel handlers; everything else in async code over `NIOAsyncChannel`. One task per
/// connection (plus one while it is subscribed) in a discarding task group; requests on a connection are answered
/// in order, connections run concurrently, and a failing connection never stops the server.
package final class SocketServer: Service {
    typealias Connection = NIOAsyncChannel<LineFrame, [UInt8]>

    /// A connection as the listener hands it over.
    struct Accepted: Sendable {
        var connection: Connection
        var peer: PeerCredentials
        var activity: ConnectionActivity
    }

    /// How long a stopping daemon lets a peer take its last answers before it closes the connection anyway.
    static let shutdownGrace: TimeAmount = .seconds(5)

    private let listener: NIOAsyncChannel<Accepted, Never>
    let dispatcher: Dispatcher
    let tracker: ConnectionTracker
    let subscribers: SubscriberRoster
    private let policyObserver: UInt64
    private let socketIdentity: SocketFile.Identity?
    let logger: Logger
    package let address: ListenAddress

    private init(
        listener: NIOAsyncChannel<Accepted, Never>,
        address: ListenAddress,
        socketIdentity: SocketFile.Identity?,
        dispatcher: Dispatcher,
        tracker: ConnectionTracker,
        logger: Logger
    ) {
        self.listener = listener
        self.address = address
        self.socketIdentity = socketIdentity
        self.dispatcher = dispatcher
        self.tracker = tracker
        self.logger = logger
        let subscribers = SubscriberRoster(events: dispatcher.registry.events, settings: dispatcher.settings)
        self.subscribers = subscribers
        self.policyObserver = dispatcher.settings.observePolicy { subscribers.revokeUnauthorized() }
    }

    /// Binds (or adopts) the listening socket. Errors here are startup errors: nothing is served yet.
    ///
    /// A socket at a path is created with its mode already set and published atomically (see `SocketFile`): when
    /// this returns, the socket exists at the path with `mode`, and it never existed there with another one.
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
            // A peer that shuts down its sending side (`socat`, `nc -N`) still gets every answer.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let settings = dispatcher.settings
        let initializer: @Sendable (any Channel) -> EventLoopFuture<Accepted> = { channel in
            KernelPeer.credentials(of: channel).flatMapThrowing { peer in
                let limits = settings.limits
                let activity = ConnectionActivity()
                let operations = channel.pipeline.syncOperations
                try operations.addHandler(
                    ByteToMessageHandler(LineFrameDecoder(maximumLineLength: limits.maximumLineBytes))
                )
                try operations.addHandler(IdleConnectionCloser(activity: activity, timeout: limits.idleTimeout))
                try operations.addHandler(MessageToByteHandler(LineFrameEncoder()))
                let connection = try Connection(
                    wrappingChannelSynchronously: channel,
                    configuration: .init(isOutboundHalfClosureEnabled: false)
                )
                return Accepted(connection: connection, peer: peer, activity: activity)
            }
        }
        let listener: NIOAsyncChannel<Accepted, Never>
        var identity: SocketFile.Identity?
        switch address {
        case .path(let path, let mode):
            try SocketFile.check(path)
            (listener, identity) = try await SocketFile.bind(
                at: path,
                mode: mode,
                { bindPath in
                    try await bootstrap.bind(unixDomainSocketPath: bindPath, childChannelInitializer: initializer)
                },
                close: { listener in try? await listener.channel.close() }
            )
        case .inherited(let descriptor, _):
            listener = try await bootstrap.bind(descriptor, childChannelInitializer: initializer)
        }
        return SocketServer(
            listener: listener,
            address: address,
            socketIdentity: identity,
            dispatcher: dispatcher,
            tracker: tracker,
            logger: logger
        )
    }

    package func run() async throws {
        defer {
            self.dispatcher.settings.removePolicyObserver(self.policyObserver)
            if case .path(let path, _) = self.address { SocketFile.remove(path, ifStill: self.socketIdentity) }
        }
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
                self.tracker.closeInputs(grace: Self.shutdownGrace)
            }
        } onGracefulShutdown: {
            self.listener.channel.close(promise: nil)
        }
    }
}
