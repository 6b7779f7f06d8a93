/// `current_user`: the active user, or null when no user is logged in.
public struct CurrentUserRequest: UsherRequest {
    public static let method = Method.currentUser
    /// Default: the caller's seat (logind), else the default seat.
    public var seat: String?

    public init(seat: String? = nil) { self.seat = seat }

    public init(params: Params) throws(ResponseError) {
        self.seat = try params.optionalString("seat")
    }

    public var params: Params {
        var params = Params()
        params.set("seat", self.seat)
        return params
    }

    public struct Result: Sendable, Hashable, Codable {
        public var generation: Int64
        /// The seat this answer is about (absent from answers of daemons without seats).
        public var seat: String?
        public var user: UserInfo?
        /// Whether the seat is locked (`lock_seat`, logind's lock): its user's tokens are refused until it is unlocked.
        public var locked: Bool

        public init(generation: Int64, seat: String? = nil, user: UserInfo?, locked: Bool = false) {
            self.generation = generation
            self.seat = seat
            self.user = user
            self.locked = locked
        }

        private enum CodingKeys: String, CodingKey { case generation, seat, user, locked }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.generation = try container.decode(Int64.self, forKey: .generation)
            self.seat = try container.decodeIfPresent(String.self, forKey: .seat)
            self.user = try container.decodeIfPresent(UserInfo.self, forKey: .user)
            // A daemon from before seat locks sends none: its seats are never locked.
            self.locked = try container.decodeIfPresent(Bool.self, forKey: .locked) ?? false
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.generation, forKey: .generation)
            try container.encodeIfPresent(self.seat, forKey: .seat)
            try container.encode(self.user, forKey: .user)
            try container.encode(self.locked, forKey: .locked)
        }
    }
}
