/// The checks a request line passes before anything in it is decoded.
///
/// Two linear passes that allocate nothing: `JSONShape` rejects bytes the decoder should never see (NUL, invalid
/// UTF-8) and nesting deeper than the limit; `JSONScanner` then checks the JSON grammar, enforces the member limit
/// while it goes (a 7,000-key object is refused at its 513th key, not decoded), and finds where the envelope's
/// members are. Only after the method and the peer's permission are known is any of it decoded.
enum JSONShape {
    static func check(_ bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) -> String? {
        var depth = 0
        var inString = false
        var escaped = false
        var continuationBytes = 0
        // The range the next continuation byte must be in: narrower than 0x80...0xBF after E0, ED, F0 and F4, which
        // rules out overlong forms, UTF-16 surrogates and code points past U+10FFFF.
        var nextContinuation: ClosedRange<UInt8> = 0x80...0xBF
        for byte in bytes {
            if continuationBytes > 0 {
                guard nextContinuation.contains(byte) else { return "the line is not valid UTF-8" }
                nextContinuation = 0x80...0xBF
                continuationBytes -= 1
                continue
            }
            switch byte {
            case 0x00:
                return "the line contains a NUL byte"
            case 0x80..<0xC2, 0xF5...0xFF:
                return "the line is not valid UTF-8"
            case 0xC2...0xDF:
                continuationBytes = 1
                escaped = false
                continue
            case 0xE0...0xEF:
                continuationBytes = 2
                nextContinuation = byte == 0xE0 ? 0xA0...0xBF : byte == 0xED ? 0x80...0x9F : 0x80...0xBF
                escaped = false
                continue
            case 0xF0...0xF4:
                continuationBytes = 3
                nextContinuation = byte == 0xF0 ? 0x90...0xBF : byte == 0xF4 ? 0x80...0x8F : 0x80...0xBF
                escaped = false
                continue
            default:
                break
            }
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > maximumDepth { return "the request is nested deeper than \(maximumDepth) levels" }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
            default:
                break
            }
        }
        return continuationBytes > 0 ? "the line is not valid UTF-8" : nil
    }
}
