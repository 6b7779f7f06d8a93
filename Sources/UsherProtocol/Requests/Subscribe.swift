/// `subscribe`: from the answer on, the connection receives events (all, or the named ones).
public struct SubscribeRequest: UsherRequest {
    public static let method = Method.subscribe
    /// Default: every event.
    public var events: [EventName]?

    public init(events: [EventName]? = nil) { self.events = events }

    public init(params: Params) throws(ResponseError) {
        guard let names = try params.optionalStringArray("events") else {
            self.events = nil
            return
        }
        var events: [EventName] = []
        for name in names {
            guard let event = EventName(rawValue: name) else {
                throw ResponseError(.invalidParams, "params.events: unknown event \"\(name)\"")
            }
            events.append(event)
        }
        self.events = events
    }

    public var params: Params {
        guard let events = self.events else { return Params() }
        return Params(["events": .array(events.map { .string($0.rawValue) })])
    }

    public struct Result: Sendable, Hashable, Codable {
        /// The generation when the subscription started: every later change arrives as events.
        public var generation: Int64
        public var subscribed: [EventName]

        public init(generation: Int64, subscribed: [EventName]) {
            self.generation = generation
            self.subscribed = subscribed
        }
    }
}
