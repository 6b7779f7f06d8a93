/// Reads the `params` of most requests without a decoder: a flat object whose values are strings without escapes,
/// integers of up to 18 digits, booleans or null (`{"user_id":"u_…","min_valid":300}`, `{"limit":100,"after":"a42"}`).
///
/// Not a JSON parser: the bytes were already checked against the JSON grammar and the limits (`LineCodec.decodeHead`),
/// and anything else (a nested value, an escape, a fraction, a repeated key) answers nil, and `params` is decoded by
/// `JSONDecoder` as before. For what it does read, the result is the one `JSONDecoder` gives (`WireWriterTests`-style
/// comparison in `FlatParamsTests`).
enum FlatParams {
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> [String: JSONValue]? {
        var index = 0
        func skipSpace() {
            while index < bytes.count,
                bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A
                    || bytes[index] == 0x0D
            {
                index += 1
            }
        }
        /// A string without escapes; the index ends after its closing quote.
        func string() -> String? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            let start = index + 1
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                if bytes[end] == UInt8(ascii: "\\") { return nil }
                end += 1
            }
            guard end < bytes.count else { return nil }
            index = end + 1
            // Valid UTF-8 already (checked with the line): the stdlib's fast path, not the generic validating one.
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
        func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
            index += count
            return true
        }
        func value() -> JSONValue? {
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let start = index
                if bytes[index] == UInt8(ascii: "-") { index += 1 }
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                    index += 1
                }
                // A fraction or an exponent is left to the decoder.
                if index < bytes.count,
                    bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: "e")
                        || bytes[index] == UInt8(ascii: "E")
                {
                    return nil
                }
                return LineCodec.plainInteger(UnsafeBufferPointer(rebasing: bytes[start..<index])[...]).map(
                    JSONValue.int
                )
            default:
                return nil
            }
        }

        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        var values: [String: JSONValue] = [:]
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { return values }
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            skipSpace()
            guard let value = value(), values.updateValue(value, forKey: key) == nil else { return nil }
            skipSpace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "}") { return values }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }
}
