/// `list_users`: every user on the device, logged in and logged out, oldest first.
public struct ListUsersRequest: UsherRequest {
    public static let method = Method.listUsers
    public init() {}
    public init(params: Params) throws(ResponseError) {}
    public var params: Params { Params() }

    public struct Result: Sendable, Hashable, Codable {
        public var generation: Int64
        public var users: [UserInfo]
        public init(generation: Int64, users: [UserInfo]) {
            self.generation = generation
            self.users = users
        }
    }
}
