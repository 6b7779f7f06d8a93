import UsherCore

/// Makes any text safe to put in one log line or one notification field: every control character is escaped and the
/// length is bounded.
///
/// A log record is one line, so a value that held a line break, a NUL (where journald ends a record) or an ESC (which
/// drives the terminal showing the log) could end a record and forge the next one (`outcome=ok peer.uid=0`). Escapes
/// are JSON's: `\n`, `\r`, `\t`, and `\u` with four hexadecimal digits for every other control character (see
/// `Unicode.Scalar.isControlCharacter`: C0, DEL, C1, line separators, bidirectional overrides); a backslash is
/// doubled, so an escape in the output always means an escaped character in the input.
enum LogText {
    /// `text` with its control characters escaped, cut (at a scalar boundary, never inside an escape) to at most
    /// `limit` UTF-8 bytes plus a marker that gives the original length: `…[61440 bytes, cut]`.
    static func escaped(_ text: some StringProtocol, limit: Int) -> String {
        let utf8 = text.utf8
        if utf8.count <= limit, utf8.allSatisfy({ (0x20..<0x7F).contains($0) && $0 != UInt8(ascii: "\\") }) {
            return String(text)
        }
        var output = ""
        output.reserveCapacity(min(utf8.count, limit) + 32)
        var length = 0
        for scalar in text.unicodeScalars {
            let piece: String
            switch scalar {
            case "\\": piece = "\\\\"
            case "\n": piece = "\\n"
            case "\r": piece = "\\r"
            case "\t": piece = "\\t"
            case _ where scalar.isControlCharacter: piece = Self.unicodeEscape(scalar)
            default: piece = String(scalar)
            }
            length += piece.utf8.count
            if length > limit {
                output += "…[\(utf8.count) bytes, cut]"
                break
            }
            output += piece
        }
        return output
    }

    /// `\uXXXX`.
    private static func unicodeEscape(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16)
        return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
