/// `switch_user`: makes another logged-in user active.
public struct SwitchUserRequest: UsherRequest {
    public static let method = Method.switchUser
    public var userID: String
    /// When set, the switch happens only if the daemon's generation still equals it (else `conflict`).
    public var ifGeneration: Int64?

    public init(userID: String, ifGeneration: Int64? = nil) {
        self.userID = userID
        self.ifGeneration = ifGeneration
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.requiredString("user_id")
        self.ifGeneration = try params.optionalInt("if_generation", in: 0...Int64.max)
    }

    public var params: Params {
        var params = Params(["user_id": .string(self.userID)])
        params.set("if_generation", self.ifGeneration)
        return params
    }

    public typealias Result = UserResult
}
