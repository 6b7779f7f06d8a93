/// Scalars as a kubeconfig writes them: finding a quoted one's end, the string one stands for, and the text that
/// writes a string back so that it reads as that string.
extension Kubeconfig {
    /// The index of the quote that closes the quoted scalar `text` starts with (`\` escapes in double quotes, `''` is a
    /// quote in single ones); nil when `text` starts with no quote or its quote is not closed. The one scanner of quoted
    /// scalars, for lines, keys and flow collections alike.
    static func closingQuote<Text: Collection>(_ text: Text) -> Text.Index? where Text.Element == Character {
        guard let quote = text.first, quote == "\"" || quote == "'" else { return nil }
        var index = text.index(after: text.startIndex)
        while index < text.endIndex {
            let character = text[index]
            if quote == "\"" && character == "\\" {
                index = text.index(after: index)
                if index < text.endIndex { index = text.index(after: index) }
                continue
            }
            if character == quote {
                let next = text.index(after: index)
                if quote == "'", next < text.endIndex, text[next] == "'" {
                    index = text.index(after: next)
                    continue
                }
                return index
            }
            index = text.index(after: index)
        }
        return nil
    }

    static func isClosedQuote(_ text: String) -> Bool {
        guard let close = Self.closingQuote(text) else { return false }
        return text.index(after: close) == text.endIndex
    }

    /// The string a scalar's text stands for (quotes and escapes undone), for comparing names.
    static func unquoted(_ text: String) -> String {
        if text.hasPrefix("'"), Self.isClosedQuote(text) {
            return String(text.dropFirst().dropLast()).replacing("''", with: "'")
        }
        guard text.hasPrefix("\""), Self.isClosedQuote(text) else { return text }
        var result = ""
        var escaped = false
        for character in text.dropFirst().dropLast() {
            if escaped {
                switch character {
                case "n": result.append("\n")
                case "t": result.append("\t")
                default: result.append(character)
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// `text` as a YAML double-quoted scalar (which JSON's strings are too).
    static func doubleQuoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    result += "\\x" + String(repeating: "0", count: 2 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }

    /// `text` as a scalar that reads back as that string: plain when nothing in it means something else to YAML.
    static func string(_ text: String) -> Node {
        let plainCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./+=@%")
        let special = ["null", "true", "false", "yes", "no", "on", "off", "~", "y", "n"]
        guard !text.isEmpty, text.allSatisfy({ plainCharacters.contains($0) }), let first = text.first,
            first.isLetter || first == "/" || first == "_" || first == ".",
            !special.contains(text.lowercased()), Double(text) == nil
        else { return .scalar(Self.doubleQuoted(text)) }
        return .scalar(text)
    }
}
