/// `switch_user`: makes another logged-in user active.
public struct SwitchUserRequest: UsherRequest {
    public static let method = Method.switchUser
    public var userID: String
    /// When set, the switch happens only if the daemon's generation still equals it (else `conflict`).
    public var ifGeneration: Int64?
    /// The seat to make the user active on. Default: the caller's seat (logind), else the default seat.
    public var seat: String?
    /// Whether a user active on another seat moves here (else `user_active_elsewhere`).
    public var move = false
    /// Whether a block lease on the seat is broken (needs `manage`; audited as forced).
    public var force = false

    public init(userID: String, ifGeneration: Int64? = nil) {
        self.userID = userID
        self.ifGeneration = ifGeneration
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.requiredString("user_id")
        self.ifGeneration = try params.optionalInt("if_generation", in: 0...Int64.max)
        self.seat = try params.optionalString("seat")
        self.move = try params.optionalBool("move") ?? false
        self.force = try params.optionalBool("force") ?? false
    }

    public var params: Params {
        var params = Params(["user_id": .string(self.userID)])
        params.set("if_generation", self.ifGeneration)
        params.set("seat", self.seat)
        params.set("move", flag: self.move)
        params.set("force", flag: self.force)
        return params
    }

    public typealias Result = UserResult
}
