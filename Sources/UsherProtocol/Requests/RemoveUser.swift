/// `remove_user`: logs the user out if needed and deletes everything about it from the device.
public struct RemoveUserRequest: UsherRequest {
    public static let method = Method.removeUser
    public var userID: String

    public init(userID: String) { self.userID = userID }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.requiredString("user_id")
    }

    public var params: Params { Params(["user_id": .string(self.userID)]) }

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
