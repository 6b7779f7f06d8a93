import NIOCore
import UsherProtocol

/// The requests that go to the registry: the connection's one task, which finishes them in order and outlives the
/// connection, carrying out the requests read in full before the peer left (`ClientPresence`).
extension RequestHandler {
    /// What the connection's task is handed.
    enum Work: Sendable {
        /// A request begun on the event loop, to finish through the registry.
        case pending(Dispatcher.Pending)
        /// A request read in full that was still waiting for its turn when the connection closed: begun by the task,
        /// in order, and its answer dropped.
        case leftover(ByteBuffer)
    }

    /// The connection closed (or its handler left the pipeline): the requests it had read in full are handed to its
    /// task, which carries them out and then ends. Runs once.
    func connectionEnded(context: ChannelHandlerContext) {
        guard let queued = self.state.end() else { return }
        self.dispatcherContext.presence.markGone()
        let leftovers = queued.compactMap { frame -> ByteBuffer? in
            guard case .line(let line) = frame else { return nil }
            let bytes = line.readableBytesView
            return bytes.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) ? nil : line
        }
        if !leftovers.isEmpty {
            let work = self.startWork(context: context)
            for line in leftovers { work.yield(.leftover(line)) }
        }
        self.work?.finish()
        self.work = nil
    }

    /// The connection's task, started at its first request that needs the registry (most connections only read, and
    /// never start one): it answers them in order, one at a time, and hands each outcome back to the event loop.
    ///
    /// Not cancelled when the connection closes: it carries out what it was handed, then the requests left in the
    /// queue (`connectionEnded`), and ends. A stopping server waits for it, and cancels it only once its grace is over
    /// (`ConnectionTracker`).
    func startWork(context: ChannelHandlerContext) -> AsyncStream<Work>.Continuation {
        if let work = self.work { return work }
        let (requests, continuation) = AsyncStream.makeStream(of: Work.self)
        let dispatcher = self.dispatcher
        let dispatcherContext = self.dispatcherContext
        let tracker = self.tracker
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        let varlink = self.varlink != nil
        let task = Task {
            await RequestHandler.serve(requests, varlink: varlink, dispatcher: dispatcher, context: dispatcherContext) {
                outcome in
                // Dropped when the connection has closed meanwhile (`finished` finds no context).
                eventLoop.execute { handler.value.finished(outcome) }
            }
            // The connection is gone: a lease one of its last requests took dies now, as the others died with it.
            dispatcher.connectionClosed(dispatcherContext)
            tracker.workEnded(connectionID: dispatcherContext.connectionID)
        }
        let peer = self.dispatcherContext.peer
        tracker.workStarted(
            task,
            connectionID: self.dispatcherContext.connectionID,
            uid: peer.uid,
            privileged: self.dispatcher.settings.policy.isPrivileged(peer)
        )
        self.work = continuation
        return continuation
    }

    /// The connection's task: finishes each request it is handed, in order, and hands its outcome to `deliver`;
    /// carries out the requests left in the queue when the connection closed, their answers going nowhere.
    private static func serve(
        _ requests: AsyncStream<Work>,
        varlink: Bool,
        dispatcher: Dispatcher,
        context: Dispatcher.Context,
        deliver: @escaping @Sendable (Dispatcher.Outcome) -> Void
    ) async {
        // The Varlink framing of the calls left when the connection closed (each call says itself whether it wants a
        // reply; none is written).
        var leftoverCalls = VarlinkCalls()
        for await work in requests {
            let pending: Dispatcher.Pending
            var delivered = true
            switch work {
            case .pending(let handed):
                pending = handed
            case .leftover(let line):
                if varlink {
                    let step = leftoverCalls.begin(line.readableBytesView, dispatcher: dispatcher, context: context)
                    guard case .pending(let begun) = step else { continue }
                    pending = begun
                } else {
                    let step = dispatcher.begin(line: line.readableBytesView, context: context)
                    guard case .pending(let begun) = step else { continue }
                    pending = begun
                }
                delivered = false
            }
            let outcome = await dispatcher.finish(pending, context: context)
            if delivered { deliver(outcome) } else { Self.drop(outcome, dispatcher: dispatcher) }
        }
    }

    /// An outcome with no connection to go to: a subscription made meanwhile ends at once.
    static func drop(_ outcome: Dispatcher.Outcome, dispatcher: Dispatcher) {
        if case .subscribed(_, let subscription) = outcome { dispatcher.registry.events.cancel(subscription.id) }
    }
}
