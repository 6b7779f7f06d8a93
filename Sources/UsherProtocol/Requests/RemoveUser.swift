/// `remove_user`: logs the user out if needed and deletes everything about it from the device.
public struct RemoveUserRequest: UsherRequest {
    public static let method = Method.removeUser
    public var userID: String
    /// Whether a block lease on the user's seat is broken (needs `manage`; audited as forced).
    public var force = false

    public init(userID: String, force: Bool = false) {
        self.userID = userID
        self.force = force
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.requiredString("user_id")
        self.force = try params.optionalBool("force") ?? false
    }

    public var params: Params {
        var params = Params(["user_id": .string(self.userID)])
        params.set("force", flag: self.force)
        return params
    }

    public struct Result: Sendable, Hashable, Codable {
        public var generation: Int64
        public var userID: String

        public init(generation: Int64, userID: String) {
            self.generation = generation
            self.userID = userID
        }

        private enum CodingKeys: String, CodingKey {
            case generation
            case userID = "user_id"
        }
    }
}
