import DequeModule

/// Where one connection is in its life: the one value `RequestHandler` keeps about it, and every change to it.
///
/// SwiftNIO's `HTTPServerPipelineHandler` keeps its connection's life the same way (`ConnectionState`): a value whose
/// cases admit only the combinations that can happen, changed only by the methods below, each of which says what the
/// handler must do. The handler does the I/O; this decides. A method called in a state where its event cannot happen
/// changes nothing and tells the handler to do nothing, so a mistake in the handler never corrupts the state.
///
/// Generic over the lines read and the pieces of a streamed answer, so that it is tested without a channel.
struct ConnectionStateMachine<Line, Chunks> {
    /// The connection's phase.
    enum State {
        /// The peer may send more lines. `reading` says whether a read was withheld because too many lines wait.
        case open(Answer, reading: Reading)
        /// The peer shut its side of the connection: the lines it sent are answered, then the connection closes.
        case inputClosed(Answer)
        /// The last bytes are being flushed, then the channel closes: nothing more is answered, no event written.
        case closing
        /// The channel is gone (or the handler left the pipeline): the lines read in full went to the connection's
        /// task (`end()`), and answers that come back are dropped.
        case ended
    }

    /// Whether the handler passes reads on to the channel.
    enum Reading: Equatable {
        case flowing
        /// A read was withheld while too many lines wait; it is made once half of them are answered.
        case held
    }

    /// What the connection's current request is doing.
    enum Answer {
        /// Nothing: the next line is answered at once.
        case ready
        /// A request is with the registry: later lines wait.
        case withRegistry
        /// A long answer is being written as the socket takes it.
        /// Events for this connection alone that come meanwhile wait in `held`, so none lands inside the answer.
        case streaming(Chunks, held: [[UInt8]])
        /// The handler is writing pieces of the streamed answer now (`takeStream()`): a writability change in the
        /// middle of it finds nothing to write.
        case writing(held: [[UInt8]])
    }

    /// What the handler does with a line it read.
    enum Received {
        /// Answer it now.
        case answer(Line)
        /// It waits in the queue for the requests before it.
        case queued
        /// The connection is closing: the line is not answered.
        case ignored
    }

    /// What the handler does with an event meant for this connection alone.
    enum EventDelivery: Equatable {
        case write
        /// It waits until the answer being streamed is written (`streamWritten()` hands it back).
        case held
        case dropped
    }

    /// What `closeIfDone()` decided.
    struct Closing: Equatable {
        /// The subscription that ended with the input, if there was one.
        var unsubscribed: UInt64?
        /// Flush, then close the channel.
        var close: Bool
    }

    private(set) var state: State = .open(.ready, reading: .flowing)
    /// Lines read that wait for the requests before them; empty once closing or ended.
    private(set) var queued: Deque<Line> = []
    /// The connection's subscription, if it has one.
    private(set) var subscription: UInt64?
    /// Tasks forwarding a subscription's events that have not ended yet (a new `subscribe` replaces the old
    /// subscription, whose task ends shortly after). The connection closes only once they have.
    private(set) var forwarders = 0
    /// A drain of `queued` is scheduled on the loop.
    private(set) var drainScheduled = false
    /// Lines waiting before reading from the socket pauses.
    let maximumQueued: Int

    init(maximumQueued: Int) {
        self.maximumQueued = maximumQueued
    }

    /// The current request's state, while the connection answers requests.
    private var answer: Answer? {
        switch self.state {
        case .open(let answer, _), .inputClosed(let answer): answer
        case .closing, .ended: nil
        }
    }

    /// Whether the connection still answers requests (`answer` is not nil). Matched without binding, so that the
    /// per-request checks copy no payload (a stream's pieces).
    private var isAnswering: Bool {
        switch self.state {
        case .open, .inputClosed: true
        case .closing, .ended: false
        }
    }

    /// Whether no request is with the registry or being streamed (`answer` is `.ready`), matched without copying.
    private var isReady: Bool {
        switch self.state {
        case .open(.ready, _), .inputClosed(.ready): true
        default: false
        }
    }

    /// Whether the next line may be answered now: no request is with the registry or being streamed, and no
    /// Varlink call's replies go on (`callOpen`: Varlink answers calls in order).
    func mayAnswer(callOpen: Bool) -> Bool {
        !callOpen && self.isReady
    }

    /// Whether events for this connection alone can still be written.
    var acceptsEvents: Bool { self.isAnswering }

    /// Whether the channel is gone.
    var isEnded: Bool {
        if case .ended = self.state { true } else { false }
    }

    private mutating func setAnswer(_ answer: Answer) {
        switch self.state {
        case .open(_, let reading): self.state = .open(answer, reading: reading)
        case .inputClosed: self.state = .inputClosed(answer)
        case .closing, .ended: break
        }
    }

    // MARK: - Lines

    /// A line was read.
    mutating func received(_ line: Line, callOpen: Bool) -> Received {
        guard self.isAnswering else { return .ignored }
        guard self.mayAnswer(callOpen: callOpen), self.queued.isEmpty else {
            self.queued.append(line)
            return .queued
        }
        return .answer(line)
    }

    /// The next queued line to answer, taken out of the queue, if one may be answered now.
    mutating func nextQueued(callOpen: Bool) -> Line? {
        guard self.mayAnswer(callOpen: callOpen) else { return nil }
        return self.queued.popFirst()
    }

    /// A line longer than the limit: its error is the connection's last answer, and the connection closes.
    mutating func lineTooLong() {
        guard self.isAnswering else { return }
        self.state = .closing
        self.queued.removeAll()
    }

    /// The request being answered went to the registry: later lines wait for it.
    mutating func requestPending() {
        guard self.isReady else { return }
        self.setAnswer(.withRegistry)
    }

    /// The registry finished the request: true when its answer is to be written, false when it goes nowhere (the
    /// connection ended meanwhile).
    mutating func registryFinished() -> Bool {
        switch self.state {
        case .open(.withRegistry, _), .inputClosed(.withRegistry): break
        default: return false
        }
        self.setAnswer(.ready)
        return true
    }

    // MARK: - Streamed answers

    /// The answer just finished is long: it is written in pieces as the socket takes them. False (nothing changes)
    /// when another request is under way, or the connection is subscribed: its events are written by another task, so
    /// the answer must go in one write, so that no event lands inside it.
    mutating func startStreaming(_ chunks: Chunks) -> Bool {
        guard self.subscription == nil, self.isReady else { return false }
        self.setAnswer(.streaming(chunks, held: []))
        return true
    }

    /// The pieces left to write, handed to the handler to write now; nil when no answer waits for the socket.
    mutating func takeStream() -> Chunks? {
        guard case .streaming(let chunks, let held) = self.answer else { return nil }
        self.setAnswer(.writing(held: held))
        return chunks
    }

    /// The socket took no more: the rest is written when it is writable again.
    mutating func streamPaused(_ chunks: Chunks) {
        guard case .writing(let held) = self.answer else { return }
        self.setAnswer(.streaming(chunks, held: held))
    }

    /// The streamed answer is written in full: the request is done. Returns the event lines that waited for it.
    mutating func streamWritten() -> [[UInt8]] {
        guard case .writing(let held) = self.answer else { return [] }
        self.setAnswer(.ready)
        return held
    }

    /// An event line meant for this connection alone.
    mutating func event(_ line: [UInt8]) -> EventDelivery {
        switch self.answer {
        case nil:
            return .dropped
        case .streaming(let chunks, var held)?:
            held.append(line)
            self.setAnswer(.streaming(chunks, held: held))
            return .held
        case .writing(var held)?:
            held.append(line)
            self.setAnswer(.writing(held: held))
            return .held
        case .ready?, .withRegistry?:
            return .write
        }
    }

    // MARK: - Draining

    /// Whether to schedule answering the queued lines later on the loop (fairness: the other connections of the loop
    /// answer first): lines wait, may be answered, and no drain is scheduled yet.
    mutating func scheduleDrain(callOpen: Bool) -> Bool {
        guard !self.drainScheduled, !self.queued.isEmpty, self.mayAnswer(callOpen: callOpen) else { return false }
        self.drainScheduled = true
        return true
    }

    /// The scheduled drain runs.
    mutating func drainRan() {
        self.drainScheduled = false
    }

    // MARK: - Reading

    /// The channel asks for a read: true to pass it on, false to withhold it while too many lines wait.
    mutating func read() -> Bool {
        guard case .open(let answer, _) = self.state, self.queued.count >= self.maximumQueued else { return true }
        self.state = .open(answer, reading: .held)
        return false
    }

    /// True when a withheld read is to be made now: half of the lines that waited are answered.
    mutating func resumeReading() -> Bool {
        guard case .open(let answer, .held) = self.state, self.queued.count < self.maximumQueued / 2 else {
            return false
        }
        self.state = .open(answer, reading: .flowing)
        return true
    }

    /// The peer shut its side: no more lines come.
    mutating func inputClosed() {
        guard case .open(let answer, _) = self.state else { return }
        self.state = .inputClosed(answer)
    }

    // MARK: - Subscriptions

    /// A subscription began, with its forwarding task. The handler ends the old one first (`unsubscribe()`).
    mutating func subscribed(_ id: UInt64) {
        self.subscription = id
        self.forwarders += 1
    }

    /// The subscription ends (its forwarding task ends soon after); returns it, nil when there was none.
    mutating func unsubscribe() -> UInt64? {
        defer { self.subscription = nil }
        return self.subscription
    }

    /// A forwarding task ended.
    mutating func forwardingEnded() {
        guard self.forwarders > 0 else { return }
        self.forwarders -= 1
    }

    // MARK: - Closing

    /// After the peer's end of input: once every line is answered, the subscription ends with the input, and once its
    /// forwarding tasks have written what they hold (at shutdown: `daemon_stopping`), the connection closes.
    mutating func closeIfDone() -> Closing {
        guard case .inputClosed(.ready) = self.state, self.queued.isEmpty else {
            return Closing(unsubscribed: nil, close: false)
        }
        let unsubscribed = self.unsubscribe()
        guard self.forwarders == 0 else { return Closing(unsubscribed: unsubscribed, close: false) }
        self.state = .closing
        return Closing(unsubscribed: unsubscribed, close: true)
    }

    /// The channel is gone: returns the lines read in full that were still waiting (to be carried out by the
    /// connection's task), or nil when it had ended already. Runs once.
    mutating func end() -> Deque<Line>? {
        guard !self.isEnded else { return nil }
        defer {
            self.state = .ended
            self.queued.removeAll()
        }
        return self.queued
    }
}
