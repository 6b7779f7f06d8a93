extension InhibitRequest {
    /// The longest `who` or `why` accepted.
    public static let maximumTextLength = 256

    public mutating func validate(_ params: Params) throws(ResponseError) {
        for (key, value) in [("who", self.who), ("why", self.why)] {
            guard !value.isEmpty, value.utf8.count <= Self.maximumTextLength else {
                throw ParamsDecoder.invalid(key, "params.\(key) must be between 1 and \(Self.maximumTextLength) bytes")
            }
        }
    }
}
