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

    /// Where a page ends, as its `next` says it: opaque to clients, `a<added>p<pass>`.
    public struct Cursor: Sendable, Hashable {
        /// The generation at which the page's last user was added: the next page starts after it.
        public var addedGeneration: Int64
        /// The generation the pass's first page was read at: users added after it are not in the pass, so that a
        /// user removed and added again during the pass (at the end of the order) is not listed a second time.
        public var passGeneration: Int64

        public init(addedGeneration: Int64, passGeneration: Int64) {
            self.addedGeneration = addedGeneration
            self.passGeneration = passGeneration
        }

        /// The text of `next`.
        public var text: String { "a\(self.addedGeneration)p\(self.passGeneration)" }

        /// The cursor `text` spells, only in the exact form `text` writes (no sign, no leading zero, nothing
        /// around it), and only for values a page can end with: an added generation from 1 (the first user is
        /// added at generation 1) up to the pass's generation. Whether the pass's generation has been reached yet
        /// is for the caller, which knows the current one.
        public init?(_ text: String) {
            let parts = text.utf8.split(separator: UInt8(ascii: "p"), omittingEmptySubsequences: false)
            guard text.utf8.first == UInt8(ascii: "a"), parts.count == 2,
                let added = Self.canonicalPositive(parts[0].dropFirst()),
                let pass = Self.canonicalPositive(parts[1]), added <= pass
            else { return nil }
            self.addedGeneration = added
            self.passGeneration = pass
        }

        /// The value of 1 to 18 ASCII digits without a leading zero; nil for anything else.
        private static func canonicalPositive(_ digits: Substring.UTF8View) -> Int64? {
            guard (1...18).contains(digits.count), digits.first != UInt8(ascii: "0") else { return nil }
            var value: Int64 = 0
            for byte in digits {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
    }
}
