import Synchronization
import UsherProtocol

/// Fans events out to subscribers.
///
/// The registry publishes only after a change is durable, and only from inside its serialized mutation section, so
/// every subscriber sees every event once, in generation order. Each subscriber has its own buffer: a slow reader
/// never delays the registry or other subscribers.
///
/// Two kinds of subscribers: in-process ones receive `Event` values; socket connections receive each event already
/// encoded as its wire line (encoded once per event, however many connections listen), with a bound on the bytes a
/// connection may leave unsent. A connection that stops reading is dropped when it reaches the bound instead of
/// making the daemon's memory grow.
package final class EventHub: Sendable {
    /// A live subscription: events arrive on `events` until `cancel` or the hub finishes.
    package struct Subscription: Sendable {
        package let id: UInt64
        package let events: AsyncStream<Event>
    }

    /// A subscription for a socket: encoded lines, ending early (after `onOverflow` is called) when the connection
    /// leaves more than its bound unsent.
    package struct LineSubscription: Sendable {
        package let id: UInt64
        package let lines: AsyncStream<[UInt8]>
        /// The seats a seat-scoped subscription (`seatedOnly`) is limited to; nil for any other.
        package var seats: Set<String>? = nil
    }

    private enum Sink {
        case events(AsyncStream<Event>.Continuation)
        case lines(
            AsyncStream<[UInt8]>.Continuation,
            format: EventLineFormat,
            limit: Int,
            pending: Int,
            onOverflow: @Sendable () -> Void
        )
    }

    private struct Subscriber {
        var filter: Set<EventName>?
        /// Events about other seats are not delivered (nil: every seat). Events about no seat always are.
        var seats: Set<String>? = nil
        /// A subscriber whose permission is limited to `seats`: events about no seat (about users, who may be active
        /// elsewhere) are not delivered to it either, but for `daemon_stopping`.
        var seatedOnly = false
        /// On a device whose events name no seat (one seat), the seat that events about a seat are about.
        var unnamedSeat: String? = nil
        var sink: Sink

        func wants(_ event: Event) -> Bool {
            guard self.filter?.contains(event.name) ?? true else { return false }
            if self.seatedOnly {
                if case .daemonStopping = event.payload { return true }
                guard let seat = event.seat ?? (event.isAboutASeat ? self.unnamedSeat : nil) else { return false }
                return self.seats?.contains(seat) ?? false
            }
            guard let seats = self.seats, let seat = event.seat else { return true }
            return seats.contains(seat)
        }
    }

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 0
        var finished = false
    }

    private let state = Mutex(State())

    package init() {}

    package var subscriberCount: Int { self.state.withLock { $0.subscribers.count } }

    /// Registers an in-process subscriber for the named events (all when nil).
    package func subscribe(filter: Set<EventName>?) -> Subscription {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        guard let id = self.register(Subscriber(filter: filter, sink: .events(continuation))) else {
            continuation.finish()
            return Subscription(id: 0, events: stream)
        }
        continuation.onTermination = { [weak self] _ in self?.cancel(id) }
        return Subscription(id: id, events: stream)
    }

    /// Registers a socket subscriber: encoded lines, at most `maximumPendingBytes` delivered but not yet
    /// `acknowledge`d. Past that, the subscription ends and `onOverflow` is called (the server closes the
    /// connection).
    package func subscribeLines(
        filter: Set<EventName>?,
        seats: Set<String>? = nil,
        seatedOnly: Bool = false,
        unnamedSeat: String? = nil,
        format: EventLineFormat,
        maximumPendingBytes: Int,
        onOverflow: @escaping @Sendable () -> Void
    ) -> LineSubscription {
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
        let sink = Sink.lines(
            continuation,
            format: format,
            limit: maximumPendingBytes,
            pending: 0,
            onOverflow: onOverflow
        )
        let subscriber = Subscriber(
            filter: filter,
            seats: seats,
            seatedOnly: seatedOnly,
            unnamedSeat: unnamedSeat,
            sink: sink
        )
        guard let id = self.register(subscriber) else {
            continuation.finish()
            return LineSubscription(id: 0, lines: stream, seats: seatedOnly ? seats : nil)
        }
        continuation.onTermination = { [weak self] _ in self?.cancel(id) }
        return LineSubscription(id: id, lines: stream, seats: seatedOnly ? seats : nil)
    }

    private func register(_ subscriber: Subscriber) -> UInt64? {
        self.state.withLock { state in
            guard !state.finished else { return nil }
            state.nextID += 1
            state.subscribers[state.nextID] = subscriber
            return state.nextID
        }
    }

    /// Records that a line subscriber has written `byteCount` bytes of what it was given.
    package func acknowledge(_ id: UInt64, byteCount: Int) {
        self.state.withLock { state in
            guard
                case .lines(let continuation, let format, let limit, let pending, let onOverflow)? =
                    state
                    .subscribers[id]?.sink
            else { return }
            state.subscribers[id]?.sink = .lines(
                continuation,
                format: format,
                limit: limit,
                pending: max(0, pending - byteCount),
                onOverflow: onOverflow
            )
        }
    }

    package func cancel(_ id: UInt64) {
        let subscriber = self.state.withLock { $0.subscribers.removeValue(forKey: id) }
        subscriber.map(Self.finish)
    }

    private static func finish(_ subscriber: Subscriber) {
        switch subscriber.sink {
        case .events(let continuation): continuation.finish()
        case .lines(let continuation, _, _, _, _): continuation.finish()
        }
    }

    package func publish(_ events: [Event]) {
        guard !events.isEmpty else { return }
        // Each event is encoded once per wire format, however many subscribers take it.
        var encoded: [EncodedKey: [UInt8]] = [:]
        var dropped: [Subscriber] = []
        self.state.withLock { state in
            for id in Array(state.subscribers.keys) {
                for (index, event) in events.enumerated() {
                    // Re-read each time: the pending count changes with every line given.
                    guard let subscriber = state.subscribers[id] else { break }
                    guard subscriber.wants(event) else { continue }
                    switch subscriber.sink {
                    case .events(let continuation):
                        continuation.yield(event)
                    case .lines(let continuation, let format, let limit, let pending, let onOverflow):
                        let key = EncodedKey(format: ObjectIdentifier(format), event: index)
                        let line = encoded[key] ?? format.encode(event)
                        encoded[key] = line
                        guard pending + line.count <= limit else {
                            // The connection stopped reading: drop it rather than buffer without bound.
                            if let removed = state.subscribers.removeValue(forKey: id) { dropped.append(removed) }
                            break
                        }
                        state.subscribers[id]?.sink = .lines(
                            continuation,
                            format: format,
                            limit: limit,
                            pending: pending + line.count,
                            onOverflow: onOverflow
                        )
                        continuation.yield(line)
                    }
                }
            }
        }
        for subscriber in dropped {
            Self.finish(subscriber)
            if case .lines(_, _, _, _, let onOverflow) = subscriber.sink { onOverflow() }
        }
    }

    /// Delivers a last event to everyone and ends every subscription (daemon shutdown).
    package func finish(with event: Event? = nil) {
        let subscribers = self.state.withLock { state in
            state.finished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers {
            if let event, subscriber.wants(event) {
                switch subscriber.sink {
                case .events(let continuation): continuation.yield(event)
                case .lines(let continuation, let format, _, _, _): continuation.yield(format.encode(event))
                }
            }
            Self.finish(subscriber)
        }
    }
}

extension Event {
    /// Whether the event is about one seat (whether or not it names it: a one-seat device's events name none).
    var isAboutASeat: Bool {
        switch self.payload {
        case .activeUserChanged, .seatAdded, .seatRemoved, .switchPending, .leaseBroken, .seatLocked, .seatUnlocked:
            true
        case .userLoggedIn, .userLoggedOut, .userRemoved, .userChanged, .tokenRefreshed, .refreshFailed,
            .daemonStopping:
            false
        }
    }
}

/// How a line subscriber's events are written: the wire format's encoder, one instance per format, so that an event
/// published to many subscribers of one format is encoded once. The hub never reads the bytes.
package final class EventLineFormat: Sendable {
    let encode: @Sendable (Event) -> [UInt8]

    package init(_ encode: @escaping @Sendable (Event) -> [UInt8]) {
        self.encode = encode
    }
}

/// An event of a `publish` call, encoded for one format.
private struct EncodedKey: Hashable {
    var format: ObjectIdentifier
    var event: Int
}
