import Synchronization
import UsherProtocol

/// Fans events out to subscribers.
///
/// The registry publishes only after a change is durable, and only from inside its serialized mutation section, so
/// every subscriber sees every event once, in generation order. Each subscriber has its own buffer: a slow reader
/// never delays the registry or other subscribers (the server bounds what a connection may leave unsent).
package final class EventHub: Sendable {
    /// A live subscription: events arrive on `events` until `cancel` or the hub finishes.
    package struct Subscription: Sendable {
        package let id: UInt64
        package let events: AsyncStream<Event>
    }

    private struct Subscriber {
        var filter: Set<EventName>?
        var continuation: AsyncStream<Event>.Continuation
    }

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 0
        var finished = false
    }

    private let state = Mutex(State())

    package init() {}

    package var subscriberCount: Int { self.state.withLock { $0.subscribers.count } }

    /// Registers a subscriber for the named events (all when nil).
    package func subscribe(filter: Set<EventName>?) -> Subscription {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        let id: UInt64? = self.state.withLock { state in
            guard !state.finished else { return nil }
            state.nextID += 1
            state.subscribers[state.nextID] = Subscriber(filter: filter, continuation: continuation)
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return Subscription(id: 0, events: stream)
        }
        continuation.onTermination = { [weak self] _ in self?.cancel(id) }
        return Subscription(id: id, events: stream)
    }

    package func cancel(_ id: UInt64) {
        let subscriber = self.state.withLock { $0.subscribers.removeValue(forKey: id) }
        subscriber?.continuation.finish()
    }

    package func publish(_ events: [Event]) {
        guard !events.isEmpty else { return }
        self.state.withLock { state in
            for subscriber in state.subscribers.values {
                for event in events where subscriber.filter?.contains(event.name) ?? true {
                    subscriber.continuation.yield(event)
                }
            }
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
            if let event, subscriber.filter?.contains(event.name) ?? true {
                subscriber.continuation.yield(event)
            }
            subscriber.continuation.finish()
        }
    }
}
