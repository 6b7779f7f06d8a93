/// `list_seats`: every seat the daemon knows, with its active user.
public struct ListSeatsRequest: UsherRequest {
    public static let method = Method.listSeats

    public init() {}
    public init(params: Params) throws(ResponseError) {}
    public var params: Params { Params() }

    public struct Result: Sendable, Hashable, Codable {
        public var generation: Int64
        /// The seat of a request that names none and whose caller has none.
        public var defaultSeat: String
        public var seats: [SeatInfo]

        public init(generation: Int64, defaultSeat: String, seats: [SeatInfo]) {
            self.generation = generation
            self.defaultSeat = defaultSeat
            self.seats = seats
        }

        private enum CodingKeys: String, CodingKey {
            case generation, seats
            case defaultSeat = "default_seat"
        }
    }
}

/// A seat as clients see it. Every key is always present.
public struct SeatInfo: Sendable, Hashable, Codable {
    public var name: String
    /// `"logind"` (systemd-logind knows it) or `"config"` (declared in `[seats] names`, or the default seat).
    public var source: String
    /// Whether the seat is there now: a logind seat that went away keeps its state and is not present.
    public var present: Bool
    /// The seat's active user, or null.
    public var userID: String?

    public init(name: String, source: String, present: Bool, userID: String?) {
        self.name = name
        self.source = source
        self.present = present
        self.userID = userID
    }

    private enum CodingKeys: String, CodingKey {
        case name, source, present
        case userID = "user_id"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.name, forKey: .name)
        try container.encode(self.source, forKey: .source)
        try container.encode(self.present, forKey: .present)
        try container.encode(self.userID, forKey: .userID)
    }
}
