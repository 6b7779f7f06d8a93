/// `list_users`: every user on the device, logged in and logged out, oldest first; a page of them with `limit`.
public struct ListUsersRequest: UsherRequest {
    public static let method = Method.listUsers
    /// The largest `limit`.
    public static let maximumLimit: Int64 = 10_000

    /// At most this many users (1…10,000); without it, every user in one answer.
    public var limit: Int64?
    /// The `next` of the previous page: the page starts after the user it names.
    public var after: String?

    public init(limit: Int64? = nil, after: String? = nil) {
        self.limit = limit
        self.after = after
    }

    public init(params: Params) throws(ResponseError) {
        self.limit = try params.optionalInt("limit", in: 1...Self.maximumLimit)
        self.after = try params.optionalString("after")
        if self.after != nil, self.limit == nil {
            throw ResponseError(.invalidParams, "params.after needs params.limit")
        }
    }

    public var params: Params {
        var params = Params()
        params.set("limit", self.limit)
        params.set("after", self.after)
        return params
    }

    public struct Result: Sendable, Hashable, Codable {
        public var generation: Int64
        public var users: [UserInfo]
        /// Where the next page starts (pass it as `after`); absent on the last page and without `limit`.
        public var next: String?

        public init(generation: Int64, users: [UserInfo], next: String? = nil) {
            self.generation = generation
            self.users = users
            self.next = next
        }
    }

    /// The cursor a page ends with: opaque to clients, the generation at which its last user was added.
    public static func cursor(afterAddedGeneration generation: Int64) -> String { "a\(generation)" }

    /// The generation a cursor names; nil when it is not one this daemon issued.
    public static func addedGeneration(fromCursor cursor: String) -> Int64? {
        guard cursor.hasPrefix("a"), cursor.utf8.count <= 20 else { return nil }
        return Int64(cursor.dropFirst()).flatMap { $0 >= 0 ? $0 : nil }
    }
}
