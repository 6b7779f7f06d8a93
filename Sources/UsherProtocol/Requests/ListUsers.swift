extension ListUsersRequest {
    /// The largest `limit`.
    public static let maximumLimit: Int64 = 10_000

    public mutating func validate(_ params: Params) throws(ResponseError) {
        try ParamsDecoder.check(self.limit, in: 1...Self.maximumLimit, "limit")
        if self.after != nil, self.limit == nil {
            throw ParamsDecoder.invalid("after", "params.after needs params.limit")
        }
    }

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
