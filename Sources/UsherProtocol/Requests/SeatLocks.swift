/// `lock_seat`: locks a seat as usherd (a kiosk, `usher lock`): its active user's tokens, narrowed tokens and DPoP
/// proofs are refused with `seat_locked` until `unlock` with the user's PIN. Locking a locked seat changes nothing.
public struct LockSeatRequest: UsherRequest {
    public static let method = Method.lockSeat
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

    public typealias Result = SeatLockResult
}

/// `unlock`: unlocks a seat (locked by usherd or by logind) with its active user's PIN, checked by usherd alone: no
/// identity provider is asked. A wrong PIN is `pin_incorrect` and counts as a failed login.
public struct UnlockRequest: UsherRequest {
    public static let method = Method.unlock
    public var seat: String?
    public var pin: String

    public init(seat: String? = nil, pin: String) {
        self.seat = seat
        self.pin = pin
    }

    public init(params: Params) throws(ResponseError) {
        self.seat = try params.optionalString("seat")
        self.pin = try params.requiredString("pin")
    }

    public var params: Params {
        var params = Params(["pin": .string(self.pin)])
        params.set("seat", self.seat)
        return params
    }

    public typealias Result = SeatLockResult
}

/// `set_pin`: sets (or replaces) a user's PIN for `unlock`: 4 to 64 characters, kept only as a slow salted hash.
public struct SetPINRequest: UsherRequest {
    public static let method = Method.setPIN
    /// Default: the active user of the caller's seat.
    public var userID: String?
    public var pin: String

    /// The PIN's length, in characters.
    public static let lengths = 4...64

    public init(userID: String? = nil, pin: String) {
        self.userID = userID
        self.pin = pin
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.optionalString("user_id")
        self.pin = try params.requiredString("pin")
        guard Self.lengths.contains(self.pin.count) else {
            throw ResponseError(
                .invalidParams,
                "params.pin must be \(Self.lengths.lowerBound) to \(Self.lengths.upperBound) characters"
            )
        }
        guard !self.pin.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ResponseError(.invalidParams, "params.pin must not contain control characters")
        }
    }

    public var params: Params {
        var params = Params(["pin": .string(self.pin)])
        params.set("user_id", self.userID)
        return params
    }

    public struct Result: Sendable, Hashable, Codable {
        /// The user whose PIN it is now.
        public var userID: String

        public init(userID: String) { self.userID = userID }

        private enum CodingKeys: String, CodingKey { case userID = "user_id" }
    }
}

/// A seat's lock, as `lock_seat` and `unlock` answer it.
public struct SeatLockResult: Sendable, Hashable, Codable {
    public var seat: String
    public var locked: Bool
    /// Who locked it (`"usherd"`, `"logind"`); null when unlocked.
    public var by: String?

    public init(seat: String, locked: Bool, by: String?) {
        self.seat = seat
        self.locked = locked
        self.by = by
    }

    private enum CodingKeys: String, CodingKey { case seat, locked, by }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.seat, forKey: .seat)
        try container.encode(self.locked, forKey: .locked)
        try container.encode(self.by, forKey: .by)
    }
}
