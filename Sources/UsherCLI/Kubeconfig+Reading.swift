/// Reading a kubeconfig's block-style YAML (by indentation) into `Kubeconfig`'s tree: the lines without comments,
/// then a recursive descent over them. Flow collections (`{}`, `[]`, JSON) are `Kubeconfig.FlowReader`'s.
extension Kubeconfig {
    /// Reads `text`: an empty document is an empty kubeconfig.
    init(parsing text: String) throws(Problem) {
        var lines: [Line] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var content = Substring(raw)
            if content.hasSuffix("\r") { content = content.dropLast() }
            let indent = content.prefix { $0 == " " }.count
            if content.dropFirst(indent).first == "\t" {
                throw Problem(description: "line \(number + 1) is indented with a tab, which YAML does not allow")
            }
            let stripped = Self.withoutComment(content.dropFirst(indent))
            guard !stripped.isEmpty else { continue }
            if indent == 0, stripped.hasPrefix("%") {
                throw Problem(description: "line \(number + 1): YAML directives are not supported")
            }
            if indent == 0, stripped == "---" || stripped.hasPrefix("--- ") {
                if !lines.isEmpty { throw Problem(description: "line \(number + 1): only one YAML document is read") }
                let rest = stripped.dropFirst(3).drop { $0 == " " }
                if !rest.isEmpty { lines.append(Line(number: number + 1, indent: 4, text: String(rest))) }
                continue
            }
            if indent == 0, stripped == "..." { break }
            lines.append(Line(number: number + 1, indent: indent, text: String(stripped)))
        }
        guard !lines.isEmpty else {
            self.root = .mapping([])
            return
        }
        var reader = Reader(lines: lines)
        self.root = try reader.node(atLeast: 0)
        if reader.index < lines.count {
            throw Problem(description: "line \(lines[reader.index].number) is not where YAML allows it")
        }
    }

    /// `text` up to a comment: a `#` at the start or after a space, outside quotes; trailing spaces dropped.
    static func withoutComment(_ text: Substring) -> Substring {
        var previous: Character = " "
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "#", previous == " " || previous == "\t" {
                return Self.trimmedTrailing(text[..<index])
            }
            if character == "\"" || character == "'", " [{,:-".contains(previous) {
                // A quoted scalar, whose # is no comment: on from its closing quote (nothing is, when it has none).
                guard let close = Self.closingQuote(text[index...]) else { break }
                index = close
            }
            previous = character
            index = text.index(after: index)
        }
        return Self.trimmedTrailing(text)
    }

    static func trimmedTrailing(_ text: Substring) -> Substring {
        var end = text.endIndex
        while end > text.startIndex, text[text.index(before: end)] == " " || text[text.index(before: end)] == "\t" {
            end = text.index(before: end)
        }
        return text[..<end]
    }

    struct Line {
        var number: Int
        var indent: Int
        var text: String
    }

    /// A recursive descent over the lines, by indentation.
    struct Reader {
        var lines: [Line]
        var index = 0

        /// The node whose first line is the next one, which must be indented at least `minimum`.
        mutating func node(atLeast minimum: Int) throws(Problem) -> Node {
            guard self.index < self.lines.count, self.lines[self.index].indent >= minimum else { return .null }
            let line = self.lines[self.index]
            if Self.isSequenceItem(line.text) { return try self.sequence(at: line.indent) }
            if Self.keyEnd(in: line.text) != nil { return try self.mapping(at: line.indent) }
            if line.text.hasPrefix("|") || line.text.hasPrefix(">") {
                throw Problem(description: "line \(line.number): a block scalar is read only as a mapping's value")
            }
            self.index += 1
            return try self.inlineValue(line.text, line: line)
        }

        static func isSequenceItem(_ text: String) -> Bool { text == "-" || text.hasPrefix("- ") }

        mutating func sequence(at indent: Int) throws(Problem) -> Node {
            var items: [Node] = []
            while self.index < self.lines.count, self.lines[self.index].indent == indent,
                Self.isSequenceItem(self.lines[self.index].text)
            {
                let line = self.lines[self.index]
                let rest = line.text.dropFirst(1).drop { $0 == " " }
                if rest.isEmpty {
                    self.index += 1  // The item is on the lines below.
                } else {
                    // `- key: value` (a mapping that starts on the item's line) or `- - x`: the rest is read as
                    // though it were on a line of its own, indented where it starts.
                    self.lines[self.index] = Line(
                        number: line.number,
                        indent: indent + (line.text.count - rest.count),
                        text: String(rest)
                    )
                }
                items.append(try self.node(atLeast: indent + 1))
            }
            return .sequence(items)
        }

        mutating func mapping(at indent: Int) throws(Problem) -> Node {
            var entries: [Entry] = []
            while self.index < self.lines.count, self.lines[self.index].indent == indent {
                let line = self.lines[self.index]
                guard let end = Self.keyEnd(in: line.text) else {
                    throw Problem(description: "line \(line.number): expected a key and a colon")
                }
                let key = String(line.text[..<end])
                if key.hasPrefix("? ") || key == "?" || key.hasPrefix("&") || key.hasPrefix("*") || key.hasPrefix("!")
                    || key.hasPrefix("<<")
                {
                    throw Problem(
                        description: "line \(line.number): complex keys, anchors and merges are not supported"
                    )
                }
                let rest = line.text[line.text.index(after: end)...].drop { $0 == " " }
                self.index += 1
                let value: Node
                if rest.isEmpty {
                    if self.index < self.lines.count, self.lines[self.index].indent == indent,
                        Self.isSequenceItem(self.lines[self.index].text)
                    {
                        value = try self.sequence(at: indent)  // `key:` then `- item` at the key's own indent
                    } else {
                        value = try self.node(atLeast: indent + 1)
                    }
                } else {
                    value = try self.inlineValue(String(rest), line: line, indent: indent)
                }
                if entries.contains(where: { Kubeconfig.unquoted($0.key) == Kubeconfig.unquoted(key) }) {
                    throw Problem(description: "line \(line.number): the key \(key) appears twice")
                }
                entries.append(Entry(key: key, value: value))
            }
            if self.index < self.lines.count, self.lines[self.index].indent > indent {
                throw Problem(description: "line \(self.lines[self.index].number) is indented more than its mapping")
            }
            return .mapping(entries)
        }

        /// A value on the line of its key or item: a scalar, a flow collection (`{}`, `[a, b]`, JSON), or a block
        /// scalar (`|`, `>`) whose lines follow, indented more than `indent`.
        mutating func inlineValue(_ text: String, line: Line, indent: Int = -1) throws(Problem) -> Node {
            if let first = text.first, "&*!".contains(first) {
                throw Problem(description: "line \(line.number): anchors, aliases and tags are not supported")
            }
            if text.hasPrefix("|") || text.hasPrefix(">") {
                return try self.blockScalar(text, line: line, indent: indent)
            }
            if text.hasPrefix("[") || text.hasPrefix("{") {
                // A flow collection may go on over the next lines (a JSON kubeconfig does): until its brackets close.
                var whole = text
                var brackets = FlowReader.Brackets()
                brackets.read(text)
                while !brackets.areClosed && self.index < self.lines.count {
                    let next = " " + self.lines[self.index].text
                    brackets.read(next)
                    whole += next
                    self.index += 1
                }
                var reader = FlowReader(text: Array(whole), line: line.number)
                let node = try reader.value()
                reader.skipSpaces()
                guard reader.position == reader.text.count else {
                    throw Problem(description: "line \(line.number): unexpected text after a flow collection")
                }
                return node
            }
            if let first = text.first, first == "\"" || first == "'" {
                guard Kubeconfig.isClosedQuote(text) else {
                    throw Problem(
                        description: "line \(line.number): a quoted scalar over several lines is not supported"
                    )
                }
            }
            return .scalar(text)
        }

        /// A literal (`|`) or folded (`>`) block scalar, read into a double-quoted scalar of the same string.
        mutating func blockScalar(_ header: String, line: Line, indent: Int) throws(Problem) -> Node {
            let literal = header.hasPrefix("|")
            let chomp = header.dropFirst().first { $0 == "-" || $0 == "+" }
            var texts: [String] = []
            let start = self.index
            while self.index < self.lines.count, self.lines[self.index].indent > indent {
                self.index += 1
            }
            guard start < self.index else { return .scalar("\"\"") }
            // Blank lines were dropped on reading, and with them what a block scalar keeps of them: fine for what a
            // kubeconfig holds in one (a certificate, a script), which YAML folds or keeps line by line.
            let base = self.lines[start].indent
            for line in self.lines[start..<self.index] {
                texts.append(String(repeating: " ", count: max(0, line.indent - base)) + line.text)
            }
            var value = texts.joined(separator: literal ? "\n" : " ")
            if chomp != "-" { value += "\n" }
            return .scalar(Kubeconfig.doubleQuoted(value))
        }

        /// Where the key of `text` ends (its colon), when `text` is `key: value` or `key:`; nil otherwise.
        static func keyEnd(in text: String) -> String.Index? {
            if let first = text.first, first == "\"" || first == "'" {
                guard let close = Kubeconfig.closingQuote(text) else { return nil }
                let after = text.index(after: close)
                guard after < text.endIndex, text[after] == ":" else { return nil }
                let next = text.index(after: after)
                return next == text.endIndex || text[next] == " " ? after : nil
            }
            if let first = text.first, "[{".contains(first) { return nil }
            var index = text.startIndex
            while index < text.endIndex {
                if text[index] == ":" {
                    let next = text.index(after: index)
                    if next == text.endIndex || text[next] == " " { return index }
                }
                index = text.index(after: index)
            }
            return nil
        }
    }
}
