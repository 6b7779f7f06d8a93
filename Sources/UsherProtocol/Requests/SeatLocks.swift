extension SetPINRequest {
    /// The PIN's length, in characters.
    public static let lengths = 4...64

    public mutating func validate(_ params: Params) throws(ResponseError) {
        guard Self.lengths.contains(self.pin.count) else {
            throw ParamsDecoder.invalid(
                "pin",
                "params.pin must be \(Self.lengths.lowerBound) to \(Self.lengths.upperBound) characters"
            )
        }
        guard !self.pin.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ParamsDecoder.invalid("pin", "params.pin must not contain control characters")
        }
    }
}
