#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the CLI knows about where its output goes: whether a person is reading it, whether colour is welcome, and how
/// text that came from outside is made safe to show.
enum Terminal {
    /// Whether `descriptor` is a terminal.
    static func isTerminal(_ descriptor: Int32) -> Bool {
        isatty(descriptor) == 1
    }

    /// Whether output on `descriptor` may be coloured: only on a terminal that is not `dumb`, and never when
    /// `NO_COLOR` is set to anything but the empty string (https://no-color.org). `--json` output is never coloured
    /// (its callers do not ask).
    static func colours(_ descriptor: Int32) -> Bool {
        guard self.isTerminal(descriptor) else { return false }
        if let noColour = getenv("NO_COLOR"), noColour.pointee != 0 { return false }
        if let term = getenv("TERM"), String(cString: term) == "dumb" { return false }
        return true
    }

    /// Whether stdout may be coloured (see `colours(_:)`).
    static var coloursStandardOutput: Bool { self.colours(STDOUT_FILENO) }

    /// SGR colours the CLI uses, sparingly: good, attention, trouble and quiet.
    enum Colour: String {
        case green = "32"
        case yellow = "33"
        case red = "31"
        case dim = "2"
        case bold = "1"
    }

    /// `text` wrapped in `colour` when `enabled`.
    static func paint(_ text: String, _ colour: Colour?, enabled: Bool) -> String {
        guard enabled, let colour, !text.isEmpty else { return text }
        return "\u{1B}[\(colour.rawValue)m\(text)\u{1B}[0m"
    }

    /// `text` with every control character written out as an escape (`\n`, `\t`, `\u001b`), so that text from
    /// outside (a name or an email from an ID token, a provider's error message) cannot drive the terminal (an ESC
    /// sequence), break a table (a line feed) or reorder what is shown (a bidirectional override). Backslashes stay
    /// as they are: this is for reading, not for parsing back.
    static func escaped(_ text: some StringProtocol) -> String {
        guard text.unicodeScalars.contains(where: self.isControlCharacter) else { return String(text) }
        var result = ""
        for scalar in text.unicodeScalars {
            guard self.isControlCharacter(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            }
        }
        return result
    }

    /// A line of JSON with the control characters JSON lets through raw inside strings (DEL, C1 such as U+009B,
    /// which terminals take for CSI, the line and paragraph separators, the bidirectional controls) written as
    /// `\uXXXX`: the same JSON value, and nothing in it that drives a terminal. The encoder has escaped C0 already.
    static func escapedJSON(_ line: [UInt8]) -> [UInt8] {
        // Every one of them is outside ASCII but DEL: a line of plain ASCII is left as it is.
        guard line.contains(where: { $0 >= 0x7F }) else { return line }
        var escaped: [UInt8] = []
        escaped.reserveCapacity(line.count + 16)
        for scalar in String(decoding: line, as: UTF8.self).unicodeScalars {
            if scalar.value >= 0x7F, self.isControlCharacter(scalar) {
                let hex = String(scalar.value, radix: 16)
                escaped += Array(("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
            } else {
                UTF8.encode(scalar) { escaped.append($0) }
            }
        }
        return escaped
    }

    /// The control characters that must not reach a terminal as they are: C0, DEL, C1, the line and paragraph
    /// separators, and the bidirectional embeddings, overrides and isolates. The same set as the daemon's
    /// `Unicode.Scalar.isControlCharacter` (UsherCore, which the CLI does not link).
    static func isControlCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x2028, 0x2029: true
        case 0x061C, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
