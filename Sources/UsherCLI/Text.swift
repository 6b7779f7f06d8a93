/// The few string operations the CLI took from Foundation, written on the standard library so that `usher` does not
/// link Foundation (and ICU) for them; they behave as the Foundation calls they replace.
enum Text {
    /// `text` without leading and trailing whitespace, as `trimmingCharacters(in: .whitespaces)` trims: spaces of
    /// Unicode category Zs and the tab, not line breaks.
    static func trimmingWhitespace(_ text: some StringProtocol) -> String {
        func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator
        }
        let scalars = String(text).unicodeScalars
        guard let first = scalars.firstIndex(where: { !isWhitespace($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !isWhitespace($0) })!
        return String(scalars[first...last])
    }

    /// `text` safe inside HTML text and attribute values: `&`, `<`, `>` and `"` escaped. Works on Unicode scalars,
    /// so a combining mark after `<` cannot hide it inside a larger character.
    static func htmlEscaped(_ text: some StringProtocol) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
