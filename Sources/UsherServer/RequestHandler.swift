import DequeModule
import Logging
import NIOCore
import UsherCore
import UsherFraming
import UsherProtocol

/// Serves one connection on its event loop: bytes in, split into lines, one answer per line out, in order.
///
/// It is the connection's only pipeline stage: it splits lines itself (`LineSplitter`, slices of the bytes read) and
/// drives the idle timeout (`IdleConnectionCloser`), so a request costs no hop between handlers and no boxing of
/// frames on the way.
///
/// Reads (`current_user`, `list_users`, a fresh `access_token`, `hello`) are answered right here from the registry's
/// published state: no task, no thread switch, no actor hop. A request that needs the registry (any change, a token
/// that must be refreshed first) is handed to the connection's one task (`work`), which answers such requests one
/// after the other. Lines that arrive meanwhile wait in the queue, and reading from the socket pauses while too many
/// wait. Answers to pipelined requests are flushed together, and a connection that pipelines a great many lines yields
/// to the other connections of its loop every `burst` lines.
///
/// When the connection closes, every request read in full is still carried out, in order (the one with the
/// registry and those queued behind it): a client that leaves as soon as it has written its request gets its change
/// made, and only the answer is dropped (`ClientPresence`; the audit record says `client_gone=true`). The task is not
/// tied to the connection's lifetime but to the server's: a stopping server waits for it (`ConnectionTracker`).
///
/// When the peer shuts down its side, every line it sent is still answered (a final unterminated one included), and
/// the connection closes once the answers are written.
final class RequestHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Lines answered in one go before the connection lets the others of its loop run.
    static let burst = 64
    /// Lines waiting before reading from the socket pauses.
    static let maximumQueued = 256

    let dispatcher: Dispatcher
    let dispatcherContext: Dispatcher.Context
    let activity: ConnectionActivity
    let tracker: ConnectionTracker
    let subscribers: SubscriberRoster
    private let idleCloser: IdleConnectionCloser
    private var splitter: LineSplitter
    /// The start of a line whose end has not been read yet.
    private var unsplit: ByteBuffer?
    /// Where the connection is in its life: every change goes through it (`ConnectionStateMachine`).
    var state = ConnectionStateMachine<LineFrame, ListLineChunks>(maximumQueued: RequestHandler.maximumQueued)
    var context: ChannelHandlerContext?
    /// The connection's one task for requests that need the registry, started with the first such request, and the
    /// way to hand it the next one.
    var work: AsyncStream<Work>.Continuation?
    /// Set on the Varlink socket: calls and replies framed by Varlink (NUL-terminated messages), answered by the same
    /// dispatcher. Nil: newline-delimited JSON.
    var varlink: VarlinkCalls?

    /// Whether a Varlink call's replies go on (Varlink answers calls in order, so the next is answered once that call
    /// ends).
    private var callOpen: Bool { self.varlink?.streaming != nil }

    init(
        dispatcher: Dispatcher,
        context: Dispatcher.Context,
        activity: ConnectionActivity,
        limits: ServerLimits,
        tracker: ConnectionTracker,
        subscribers: SubscriberRoster,
        wire: WireFormat = .lines
    ) {
        self.splitter = LineSplitter(
            maximumLineLength: limits.maximumLineBytes,
            terminator: wire.isVarlink ? 0 : UInt8(ascii: "\n")
        )
        switch wire {
        case .lines: self.varlink = nil
        case .varlink: self.varlink = VarlinkCalls()
        case .userDatabase(let userDatabase): self.varlink = VarlinkCalls(userDatabase: userDatabase)
        }
        let leases = dispatcher.registry.leases
        let connectionID = context.connectionID
        self.idleCloser = IdleConnectionCloser(activity: activity, timeout: limits.idleTimeout) {
            leases.holdsAny(connectionID: connectionID)
        }
        self.dispatcher = dispatcher
        self.dispatcherContext = context
        self.activity = activity
        self.tracker = tracker
        self.subscribers = subscribers
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.idleCloser.start(context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.idleCloser.stop()
        self.unsubscribe()
        self.connectionEnded(context: context)
        self.context = nil
    }

    // MARK: - Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = Self.unwrapInboundIn(data)
        if var start = self.unsplit {
            // Taken out first, so that the handler's own reference does not make appending copy it.
            self.unsplit = nil
            start.writeImmutableBuffer(bytes)
            bytes = start
        }
        while let frame = self.splitter.next(from: &bytes) {
            self.received(frame, context: context)
        }
        if bytes.readableBytes > 0 { self.unsplit = bytes }
    }

    private func received(_ frame: LineFrame, context: ChannelHandlerContext) {
        guard case .answer(let frame) = self.state.received(frame, callOpen: self.callOpen) else { return }
        self.answer(frame, context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            if var rest = self.unsplit {
                self.unsplit = nil
                if let frame = self.splitter.last(from: &rest) { self.received(frame, context: context) }
            }
            self.state.inputClosed()
            self.closeIfDone(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.idleCloser.stop()
        self.unsplit = nil
        self.unsubscribe()
        self.connectionEnded(context: context)
        self.dispatcher.connectionClosed(self.dispatcherContext)
        context.fireChannelInactive()
    }

    // MARK: - Outbound

    func read(context: ChannelHandlerContext) {
        if self.state.read() { context.read() }
    }

    // MARK: - Answering

    private func answer(_ frame: LineFrame, context: ChannelHandlerContext) {
        guard case .line(let buffer) = frame else {
            let error = ResponseError(.lineTooLong, "the line is longer than the limit; closing the connection")
            self.write(
                self.varlink == nil ? LineCodec.encodeError(id: nil, error) : VarlinkReply.error(error),
                context: context
            )
            self.state.lineTooLong()
            self.flushThenClose(context: context)
            return
        }
        let line = buffer.readableBytesView
        if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { return }
        self.activity.requestStarted()
        let step =
            if self.varlink != nil {
                self.varlink!.begin(line, dispatcher: self.dispatcher, context: self.dispatcherContext)
            } else {
                self.dispatcher.begin(line: line, context: self.dispatcherContext).asLine
            }
        switch step {
        case .answered(let bytes):
            self.answered(bytes, context: context)
        case .pending(let pending):
            self.state.requestPending()
            context.flush()
            self.startWork(context: context).yield(.pending(pending))
        }
    }

    private func answered(_ bytes: [UInt8], context: ChannelHandlerContext) {
        // Empty: a Varlink call with `oneway`, answered with no reply.
        if !bytes.isEmpty { self.write(bytes, context: context) }
        // Answered: from here on the connection may go idle even while the peer is slow to take the answer.
        self.activity.requestFinished()
        self.tracker.requestAnswered(to: self.dispatcherContext.peer.uid)
    }

    func finished(_ outcome: Dispatcher.Outcome) {
        guard let context = self.context, self.state.registryFinished() else {
            Self.drop(outcome, dispatcher: self.dispatcher)
            return
        }
        switch outcome {
        case .response(let reply):
            self.answered(self.framed(reply), context: context)
        case .subscribed(let reply, let subscription):
            self.unsubscribe()
            self.answered(self.framed(reply), context: context)
            self.forward(subscription, context: context)
        case .streamed(var chunks):
            if self.varlink != nil { chunks.framing = .varlink }
            guard self.state.startStreaming(chunks) else {
                // Subscribed: events are written by another task, so the answer goes in one write and none lands
                // inside it.
                var line: [UInt8] = []
                while let chunk = chunks.next() { line += chunk }
                self.answered(line, context: context)
                break
            }
            self.pump(context: context)
            return
        }
        context.flush()
        self.drain(context: context)
    }

    /// Writes pieces of the answer being streamed while the channel is writable; the rest follows when it is again.
    ///
    /// A flush can make the channel writable again and deliver `channelWritabilityChanged` while this runs; the
    /// pieces are taken out of the state meanwhile (`takeStream()`), so that nested call writes nothing twice.
    private func pump(context: ChannelHandlerContext) {
        guard var chunks = self.state.takeStream() else { return }
        while context.channel.isWritable, let chunk = chunks.next() {
            // A oneway Varlink call gets no reply.
            if self.varlink?.wantsReply ?? true { self.write(chunk, context: context) }
            context.flush()
        }
        guard context.channel.isWritable else {
            self.state.streamPaused(chunks)
            return
        }
        // Written in full: now the event lines that waited for it.
        for line in self.state.streamWritten() { self.write(line, context: context) }
        self.activity.requestFinished()
        self.tracker.requestAnswered(to: self.dispatcherContext.peer.uid)
        self.drain(context: context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { self.pump(context: context) }
        context.fireChannelWritabilityChanged()
    }

    /// Answers queued lines until one needs the registry, the queue is empty, or a burst is done.
    private func drain(context: ChannelHandlerContext) {
        var answered = 0
        while answered < Self.burst, let frame = self.state.nextQueued(callOpen: self.callOpen) {
            self.answer(frame, context: context)
            answered += 1
        }
        context.flush()
        if self.state.scheduleDrain(callOpen: self.callOpen) {
            // Fairness: let the other connections of this loop answer before this one answers more.
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.execute {
                handler.value.state.drainRan()
                if let context = handler.value.context { handler.value.drain(context: context) }
            }
        }
        if self.state.resumeReading() { context.read() }
        self.closeIfDone(context: context)
    }

    /// Writes an event meant for this connection alone (`switch_pending`, `lease_broken` to a lease holder).
    /// While a long answer is being streamed the line waits until the answer is written in full, so that it never
    /// lands between the answer's pieces. On the Varlink socket it is a reply of the `Inhibit` call that streams the
    /// lease's events, and has nowhere to go without one.
    func deliverEvent(_ event: Event) {
        guard let context = self.context, self.state.acceptsEvents else { return }
        guard self.varlink == nil else {
            guard let reply = self.varlink!.leaseEvent(event) else { return }
            self.write(reply, context: context)
            // `lease_broken` ended the call: the calls that waited for it are answered now.
            if self.varlink!.streaming == nil { self.drain(context: context) } else { context.flush() }
            return
        }
        let line = LineCodec.encode(event)
        guard self.state.event(line) == .write else { return }
        self.write(line, context: context)
        context.flush()
    }

    private func write(_ bytes: [UInt8], context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.write(Self.wrapOutboundOut(buffer), promise: nil)
    }

    /// After the peer's end of input: close once every line is answered and written.
    func closeIfDone(context: ChannelHandlerContext) {
        // The subscription ends with the input. Its forwarding task still writes the events it holds (at shutdown:
        // `daemon_stopping`), then stops and calls back here.
        let closing = self.state.closeIfDone()
        if let id = closing.unsubscribed { self.subscriptionEnded(id) }
        if closing.close { self.flushThenClose(context: context) }
    }

    /// Waits until everything written so far has been handed to the kernel (an empty write completes after every
    /// earlier one), then closes. If the peer never reads, the idle timeout or the shutdown grace closes it.
    private func flushThenClose(context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(Self.wrapOutboundOut(channel.allocator.buffer(capacity: 0))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    // MARK: - Varlink

    /// An answer as this connection's framing writes it: a line, or the reply of the Varlink call being answered.
    private func framed(_ reply: Reply) -> [UInt8] {
        self.varlink == nil ? reply.line : self.varlink!.reply(to: reply)
    }
}
