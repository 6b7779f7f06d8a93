/// `current_user`: the active user, or null when no user is logged in.
public struct CurrentUserRequest: UsherRequest {
    public static let method = Method.currentUser
    public init() {}
    public init(params: Params) throws(ResponseError) {}
    public var params: Params { Params() }

    public struct Result: Sendable, Hashable, Codable {
        public var generation: Int64
        public var user: UserInfo?

        public init(generation: Int64, user: UserInfo?) {
            self.generation = generation
            self.user = user
        }

        private enum CodingKeys: String, CodingKey { case generation, user }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.generation, forKey: .generation)
            try container.encode(self.user, forKey: .user)
        }
    }
}
