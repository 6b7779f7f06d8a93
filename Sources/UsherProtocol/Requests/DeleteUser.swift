/// `delete_user`: deletes the user's account at its provider, then removes the user from the device.
public struct DeleteUserRequest: UsherRequest {
    public static let method = Method.deleteUser
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

    /// `{"generation", "user_id", "deleted"}`: `deleted` lists the identities whose accounts were deleted at their
    /// providers.
    public struct Result: Sendable, Hashable, Codable {
        public var generation: Int64
        public var userID: String
        public var deleted: [Identity]

        public init(generation: Int64, userID: String, deleted: [Identity]) {
            self.generation = generation
            self.userID = userID
            self.deleted = deleted
        }

        private enum CodingKeys: String, CodingKey {
            case generation
            case userID = "user_id"
            case deleted
        }
    }
}
