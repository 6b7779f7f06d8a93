import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import UsherCore
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

/// What a socket speaks: newline-delimited JSON (`usher.sock`), or Varlink (`io.usher.Session`), the same requests
/// framed as Varlink calls (`Varlink/`), or systemd's `io.systemd.UserDatabase` (`io.usher.Users`), which answers
/// from the Unix user directory and never reaches the dispatcher.
package enum WireFormat: Sendable {
    case lines
    case varlink
    case userDatabase(UserDatabaseInterface)

    /// Messages end with a NUL, and errors are Varlink's.
    var isVarlink: Bool {
        if case .lines = self { false } else { true }
    }

    /// Whether connections are worth identifying (which program, its unit): not on the user database's socket, which
    /// every process's NSS lookups use, and which answers the same to all.
    var identifiesPrograms: Bool {
        if case .userDatabase = self { false } else { true }
    }
}

/// The Unix-socket server: newline-delimited JSON in, one response per request out, events to subscribers.
///
/// Each connection is served by a `RequestHandler` on its event loop: reads are answered there, changes go to the
/// registry in a task. Connections run concurrently, requests on one connection are answered in order, and a failing
/// connection never stops the server.
package final class SocketServer: Service {
    /// How long a stopping daemon lets a peer take its last answers before it closes the connection anyway.
    static let shutdownGrace: TimeAmount = .seconds(5)

    private let listener: any Channel
    let dispatcher: Dispatcher
    let tracker: ConnectionTracker
    let subscribers: SubscriberRoster
    private let policyObserver: UInt64
    private let socketIdentity: SocketFile.Identity?
    let logger: Logger
    package let address: ListenAddress
    package let wire: WireFormat

    private init(
        listener: any Channel,
        address: ListenAddress,
        wire: WireFormat,
        socketIdentity: SocketFile.Identity?,
        dispatcher: Dispatcher,
        tracker: ConnectionTracker,
        subscribers: SubscriberRoster,
        logger: Logger
    ) {
        self.listener = listener
        self.address = address
        self.wire = wire
        self.socketIdentity = socketIdentity
        self.dispatcher = dispatcher
        self.tracker = tracker
        self.logger = logger
        self.subscribers = subscribers
        self.policyObserver = dispatcher.settings.observePolicy { subscribers.revokeUnauthorized() }
    }

    /// Binds (or adopts) the listening socket. Errors here are startup errors: nothing is served yet.
    ///
    /// A socket at a path is created with its mode already set and published atomically (see `SocketFile`): when
    /// this returns, the socket exists at the path with `mode`, and it never existed there with another one.
    package static func bind(
        _ address: ListenAddress,
        wire: WireFormat = .lines,
        dispatcher: Dispatcher,
        tracker: ConnectionTracker,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) async throws -> SocketServer {
        let subscribers = SubscriberRoster(events: dispatcher.registry.events, settings: dispatcher.settings)
        let bootstrap = ServerBootstrap(group: group)
            // Bursts of clients (every program on the device asking at once) queue here rather than fail with EAGAIN.
            .serverChannelOption(.backlog, value: 4096)
            // Nothing is accepted before `run()`: until then the daemon is not yet a service that stops gracefully
            // (a SIGTERM would end it mid-answer), and clients simply wait in the backlog.
            .serverChannelOption(.autoRead, value: false)
            // A peer that shuts down its sending side (`socat`, `nc -N`) still gets every answer.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
            KernelPeer.credentials(of: channel).flatMap { peer in
                guard wire.identifiesPrograms else { return channel.eventLoop.makeSucceededFuture(peer) }
                return ProgramIdentifier.identify(peer, of: channel, digests: dispatcher.settings.digests)
            }.flatMapThrowing { peer in
                try Self.setUp(
                    channel,
                    wire: wire,
                    peer: peer,
                    dispatcher: dispatcher,
                    tracker: tracker,
                    subscribers: subscribers,
                    logger: logger
                )
            }
        }
        let listener: any Channel
        var identity: SocketFile.Identity?
        switch address {
        case .path(let path, let mode):
            try SocketFile.check(path)
            (listener, identity) = try await SocketFile.bind(
                at: path,
                mode: mode,
                { bindPath in
                    try await bootstrap.childChannelInitializer(initializer).bind(unixDomainSocketPath: bindPath).get()
                },
                close: { listener in try? await listener.close() }
            )
        case .inherited(let descriptor, _):
            listener = try await bootstrap.childChannelInitializer(initializer).withBoundSocket(descriptor).get()
        }
        return SocketServer(
            listener: listener,
            address: address,
            wire: wire,
            socketIdentity: identity,
            dispatcher: dispatcher,
            tracker: tracker,
            subscribers: subscribers,
            logger: logger
        )
    }

    /// Admits a new connection (or tells it why not and closes it) and builds its pipeline. On its event loop.
    private static func setUp(
        _ channel: any Channel,
        wire: WireFormat,
        peer: PeerCredentials,
        dispatcher: Dispatcher,
        tracker: ConnectionTracker,
        subscribers: SubscriberRoster,
        logger: Logger
    ) throws {
        let settings = dispatcher.settings
        let limits = settings.limits
        // Everything this connection logs counts against its peer's uid (`PeerLogBudget`), but root's and the
        // daemon's own: a login screen running as root relays every user's logins, and their audit records must
        // not be the ones left out (as they are exempt from `max_connections_per_uid`).
        var logger =
            settings.policy.isPrivileged(peer) ? logger : dispatcher.logBudget.logger(logger, uid: peer.uid)
        logger[metadataKey: "peer.uid"] = "\(peer.uid)"
        logger[metadataKey: "peer.pid"] = "\(peer.pid)"
        let connectionID = Self.connectionNumbers.add(1, ordering: .relaxed).newValue
        let admission = tracker.admit(
            channel,
            connectionID: connectionID,
            uid: peer.uid,
            privileged: settings.policy.isPrivileged(peer),
            limits: limits
        )
        guard admission == .admitted else {
            if case .refused(let reason) = admission {
                let (log, unlogged) = tracker.shouldLogRefusal(of: peer.uid)
                if log {
                    logger.warning(
                        "too many connections; refusing one",
                        metadata: ["reason": "\(reason)", "refused.unlogged": "\(unlogged)"]
                    )
                }
                let error = ResponseError(.tooManyConnections, reason)
                let line = wire.isVarlink ? VarlinkReply.error(error) : LineCodec.encodeError(id: nil, error)
                var buffer = channel.allocator.buffer(capacity: line.count)
                buffer.writeBytes(line)
                channel.writeAndFlush(buffer).whenComplete { _ in channel.close(promise: nil) }
            }
            return
        }
        channel.closeFuture.whenComplete { _ in tracker.remove(channel) }
        let activity = ConnectionActivity()
        // Event lines for this connection go through its handler, which keeps them out of a streamed answer; weak,
        // so that the handler and its context do not keep each other alive.
        let events = NIOLoopBound(EventLineSink(), eventLoop: channel.eventLoop)
        let context = Dispatcher.Context(
            peer: peer,
            executable: peer.program.identity.executable,
            logger: logger,
            close: { channel.close(promise: nil) },
            connectionID: connectionID,
            seat: settings.seatOfPeer(peer),
            notify: { event in
                channel.eventLoop.execute { events.value.handler?.deliverEvent(event) }
            },
            eventFormat: wire.isVarlink ? .varlink : .lines
        )
        let handler = RequestHandler(
            dispatcher: dispatcher,
            context: context,
            activity: activity,
            limits: limits,
            tracker: tracker,
            subscribers: subscribers,
            wire: wire
        )
        events.value.handler = handler
        try channel.pipeline.syncOperations.addHandler(handler)
    }

    package func run() async throws {
        defer {
            self.dispatcher.settings.removePolicyObserver(self.policyObserver)
            if case .path(let path, _) = self.address { SocketFile.remove(path, ifStill: self.socketIdentity) }
        }
        let listener = self.listener
        try await listener.setOption(.autoRead, value: true).get()
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                try? await listener.closeFuture.get()
            } onCancel: {
                listener.close(promise: nil)
            }
        } onGracefulShutdown: {
            listener.close(promise: nil)
        }
        // No longer accepting. Tell subscribers first (their connections write `daemon_stopping` before they close),
        // then let every connection finish what it is answering, and close. Requests read from connections that
        // closed are carried out too, within the same grace: past it, what they have not committed is cancelled
        // (a switch still waiting for a delay lease, say), so that nothing holds up the stop.
        await self.dispatcher.registry.announceStopping()
        self.tracker.closeInputs(grace: Self.shutdownGrace)
        let tracker = self.tracker
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                guard (try? await Task.sleep(for: .nanoseconds(Self.shutdownGrace.nanoseconds))) != nil else { return }
                tracker.cancelWork()
            }
            await tracker.allClosed()
            group.cancelAll()
        }
    }

    /// Numbers connections for the daemon's life (leases belong to the connection that took them).
    private static let connectionNumbers = Atomic<UInt64>(0)

    /// The last line a subscriber whose `read` permission was revoked receives (an error with a null id: it answers
    /// no request of the peer's).
    static let revocationError = ResponseError(
        .permissionDenied,
        "the access policy no longer allows this peer \"read\"; the subscription has ended and the connection closes"
    )
    static let revocationNotice = LineCodec.encodeError(id: nil, revocationError)
}

/// Where a connection's own event lines go: its request handler, once it is in the pipeline.
private final class EventLineSink {
    weak var handler: RequestHandler?
}
