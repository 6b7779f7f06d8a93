/// `subscribe`: from the answer on, the connection receives events (all, or the named ones).
public struct SubscribeRequest: UsherRequest {
    public static let method = Method.subscribe
    /// Default: every event.
    public var events: [EventName]?
    /// Default: events about every seat. With a list, events about other seats are not sent (events about no seat
    /// in particular always are).
    public var seats: [String]?

    public init(events: [EventName]? = nil, seats: [String]? = nil) {
        self.events = events
        self.seats = seats
    }

    public init(params: Params) throws(ResponseError) {
        self.seats = try params.optionalStringArray("seats")
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
        var params = Params()
        if let events = self.events { params["events"] = .array(events.map { .string($0.rawValue) }) }
        if let seats = self.seats { params["seats"] = .array(seats.map { .string($0) }) }
        return params
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
