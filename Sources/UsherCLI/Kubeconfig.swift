#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A kubeconfig file, read and written by usher itself rather than through `kubectl config set-credentials`, which
/// panics on realistic kubeconfigs in the kubectl that Debian 12 ships (1.20: a nil map in its JSON iterator).
///
/// A kubeconfig is YAML, as kubectl writes it: block mappings and sequences of plain or quoted scalars, `{}` and `[]`
/// (and JSON, which is YAML's flow style). This reads that subset into a tree that keeps each scalar's text as written
/// (so `true`, `"true"`, `8443` and `null` stay what they were), changes one context's user and one user entry, and
/// writes the tree back in kubectl's own layout. Everything else the file holds stays: other users, contexts,
/// clusters, preferences, extensions, in their order. Comments go, as they do when kubectl writes the file. What the
/// subset does not cover (anchors, aliases, tags, several documents) is refused with a message, never half-read.
///
/// Not a YAML library: the one in reach (Yams) needs the whole of Foundation and ICU, which the CLI does not link
/// (`make check-no-foundation`, docs/performance.md).
struct Kubeconfig {
    indirect enum Node: Equatable, Sendable {
        /// A scalar's text as written: plain (`v1`, `null`, `true`), or quoted with its quotes (`"a b"`, `'x'`).
        case scalar(String)
        case mapping([Entry])
        case sequence([Node])

        static let null = Node.scalar("null")
    }

    struct Entry: Equatable, Sendable {
        /// The key as written (plain or quoted).
        var key: String
        var value: Node
    }

    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    var root: Node

    // MARK: Reading

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
        var quote: Character?
        var previous: Character = " "
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if let open = quote {
                if character == open {
                    // '' inside a single-quoted scalar is a quote, not its end.
                    let next = text.index(after: index)
                    if open == "'", next < text.endIndex, text[next] == "'" {
                        index = text.index(after: next)
                        previous = "'"
                        continue
                    }
                    quote = nil
                } else if open == "\"", character == "\\" {
                    index = text.index(after: index)
                    if index < text.endIndex { index = text.index(after: index) }
                    continue
                }
            } else if character == "#", previous == " " || previous == "\t" {
                return Self.trimmedTrailing(text[..<index])
            } else if character == "\"" || character == "'", " [{,:-".contains(previous) || index == text.startIndex {
                quote = character
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
                    self.index += 1
                    items.append(try self.node(atLeast: indent + 1))
                } else {
                    // `- key: value` (a mapping that starts on the item's line) or `- - x`: the rest is read as
                    // though it were on a line of its own, indented where it starts.
                    self.lines[self.index] = Line(
                        number: line.number,
                        indent: indent + (line.text.count - rest.count),
                        text: String(rest)
                    )
                    items.append(try self.node(atLeast: indent + 1))
                }
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
                while !FlowReader.isClosed(whole) && self.index < self.lines.count {
                    whole += " " + self.lines[self.index].text
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

    /// JSON's and YAML's flow style: `{a: b, "c": [1, 2]}`.
    struct FlowReader {
        var text: [Character]
        var line: Int
        var position = 0

        static func isClosed(_ text: String) -> Bool {
            var depth = 0
            var quote: Character?
            var escaped = false
            for character in text {
                if let open = quote {
                    if escaped {
                        escaped = false
                    } else if open == "\"" && character == "\\" {
                        escaped = true
                    } else if character == open {
                        quote = nil
                    }
                    continue
                }
                switch character {
                case "\"", "'": quote = character
                case "[", "{": depth += 1
                case "]", "}": depth -= 1
                default: break
                }
            }
            return depth <= 0 && quote == nil
        }

        mutating func skipSpaces() {
            while self.position < self.text.count, self.text[self.position] == " " { self.position += 1 }
        }

        func problem(_ what: String) -> Problem {
            Problem(description: "line \(self.line): \(what) in a flow collection")
        }

        mutating func value() throws(Problem) -> Node {
            self.skipSpaces()
            guard self.position < self.text.count else { throw self.problem("a missing value") }
            switch self.text[self.position] {
            case "{":
                self.position += 1
                var entries: [Entry] = []
                while true {
                    self.skipSpaces()
                    guard self.position < self.text.count else { throw self.problem("an unclosed {") }
                    if self.text[self.position] == "}" {
                        self.position += 1
                        return .mapping(entries)
                    }
                    guard case .scalar(let key) = try self.scalar(stoppingAtColon: true) else {
                        throw self.problem("a key that is not a scalar")
                    }
                    self.skipSpaces()
                    guard self.position < self.text.count, self.text[self.position] == ":" else {
                        throw self.problem("a key without a colon")
                    }
                    self.position += 1
                    entries.append(Entry(key: key, value: try self.value()))
                    try self.separator(closing: "}")
                }
            case "[":
                self.position += 1
                var items: [Node] = []
                while true {
                    self.skipSpaces()
                    guard self.position < self.text.count else { throw self.problem("an unclosed [") }
                    if self.text[self.position] == "]" {
                        self.position += 1
                        return .sequence(items)
                    }
                    items.append(try self.value())
                    try self.separator(closing: "]")
                }
            case "&", "*", "!":
                throw self.problem("an anchor, alias or tag")
            default:
                return try self.scalar(stoppingAtColon: false)
            }
        }

        /// After an entry: a comma, or the closing bracket (left for the caller).
        mutating func separator(closing: Character) throws(Problem) {
            self.skipSpaces()
            guard self.position < self.text.count else { throw self.problem("an unclosed \(closing)") }
            if self.text[self.position] == "," {
                self.position += 1
            } else if self.text[self.position] != closing {
                throw self.problem("a missing comma")
            }
        }

        mutating func scalar(stoppingAtColon: Bool) throws(Problem) -> Node {
            self.skipSpaces()
            let start = self.position
            if let quote = self.text[safe: self.position], quote == "\"" || quote == "'" {
                self.position += 1
                while self.position < self.text.count {
                    let character = self.text[self.position]
                    if quote == "\"" && character == "\\" {
                        self.position += 2
                        continue
                    }
                    if character == quote {
                        if quote == "'", self.text[safe: self.position + 1] == "'" {
                            self.position += 2
                            continue
                        }
                        self.position += 1
                        return .scalar(String(self.text[start..<self.position]))
                    }
                    self.position += 1
                }
                throw self.problem("an unclosed quote")
            }
            while self.position < self.text.count {
                let character = self.text[self.position]
                if ",]}".contains(character) { break }
                if stoppingAtColon, character == ":",
                    self.position + 1 == self.text.count || " ,]}".contains(self.text[self.position + 1])
                {
                    break
                }
                self.position += 1
            }
            let scalar = String(self.text[start..<self.position]).trimmingSpaces
            guard !scalar.isEmpty else { throw self.problem("an empty value") }
            return .scalar(scalar)
        }
    }

    // MARK: Scalars

    /// The index of the quote that closes the quoted scalar `text` starts with.
    static func closingQuote(_ text: String) -> String.Index? {
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

    // MARK: Editing

    /// The mapping entry `key`'s value.
    static func value(_ key: String, in entries: [Entry]) -> Node? {
        entries.first { Self.unquoted($0.key) == key }?.value
    }

    static func setting(_ key: String, to value: Node, in entries: [Entry]) -> [Entry] {
        var entries = entries
        if let index = entries.firstIndex(where: { Self.unquoted($0.key) == key }) {
            entries[index].value = value
        } else {
            entries.append(Entry(key: key, value: value))
        }
        return entries
    }

    /// The named items of the top-level list `key` (`contexts`, `users`): null and missing are empty lists.
    func namedItems(_ key: String) throws(Problem) -> [Node] {
        guard case .mapping(let entries) = self.root else {
            throw Problem(description: "the kubeconfig is not a mapping of apiVersion, clusters, contexts, users...")
        }
        switch Self.value(key, in: entries) {
        case nil, .scalar("null")?, .scalar("~")?: return []
        case .sequence(let items)?: return items
        default: throw Problem(description: "\(key) is not a list")
        }
    }

    static func name(of item: Node) -> String? {
        guard case .mapping(let entries) = item, case .scalar(let name)? = Self.value("name", in: entries) else {
            return nil
        }
        return Self.unquoted(name)
    }

    /// Whether the kubeconfig has the context `name`.
    func hasContext(_ name: String) throws(Problem) -> Bool {
        try self.namedItems("contexts").contains { Self.name(of: $0) == name }
    }

    /// Points the context `context` at the user `userName`, whose credentials come from `exec` (replacing a user of
    /// that name, keeping the rest of its entry).
    mutating func setExecUser(_ userName: String, exec: Node, forContext context: String) throws(Problem) {
        var contexts = try self.namedItems("contexts")
        guard let contextIndex = contexts.firstIndex(where: { Self.name(of: $0) == context }),
            case .mapping(var contextEntries) = contexts[contextIndex]
        else { throw Problem(description: "no context \(context)") }
        var inner: [Entry] = []
        switch Self.value("context", in: contextEntries) {
        case .mapping(let entries)?: inner = entries
        case nil, .scalar("null")?: inner = []
        default: throw Problem(description: "context \(context) is not a mapping")
        }
        inner = Self.setting("user", to: Self.string(userName), in: inner)
        contextEntries = Self.setting("context", to: .mapping(inner), in: contextEntries)
        contexts[contextIndex] = .mapping(contextEntries)

        var users = try self.namedItems("users")
        let user = Node.mapping([Entry(key: "exec", value: exec)])
        if let index = users.firstIndex(where: { Self.name(of: $0) == userName }),
            case .mapping(let entries) = users[index]
        {
            users[index] = .mapping(Self.setting("user", to: user, in: entries))
        } else {
            users.append(.mapping([Entry(key: "name", value: Self.string(userName)), Entry(key: "user", value: user)]))
        }
        guard case .mapping(var root) = self.root else { return }
        root = Self.setting("contexts", to: .sequence(contexts), in: root)
        root = Self.setting("users", to: .sequence(users), in: root)
        self.root = .mapping(root)
    }

    // MARK: Writing

    /// The file's text, in kubectl's layout: two spaces a level, a list's items at its key's indent.
    var text: String {
        var out = ""
        Self.write(self.root, indent: 0, into: &out)
        return out
    }

    private static func write(_ node: Node, indent: Int, into out: inout String) {
        let pad = String(repeating: " ", count: indent)
        switch node {
        case .scalar(let text):
            out += pad + text + "\n"
        case .mapping(let entries):
            if entries.isEmpty {
                out += pad + "{}\n"
                return
            }
            for entry in entries {
                Self.writeEntry(entry, pad: pad, indent: indent, into: &out)
            }
        case .sequence(let items):
            if items.isEmpty {
                out += pad + "[]\n"
                return
            }
            for item in items {
                Self.writeItem(item, pad: pad, indent: indent, into: &out)
            }
        }
    }

    private static func writeEntry(_ entry: Entry, pad: String, indent: Int, into out: inout String) {
        switch entry.value {
        case .scalar(let text):
            out += pad + entry.key + ": " + text + "\n"
        case .mapping(let entries) where entries.isEmpty:
            out += pad + entry.key + ": {}\n"
        case .sequence(let items) where items.isEmpty:
            out += pad + entry.key + ": []\n"
        case .mapping:
            out += pad + entry.key + ":\n"
            Self.write(entry.value, indent: indent + 2, into: &out)
        case .sequence:
            out += pad + entry.key + ":\n"
            Self.write(entry.value, indent: indent, into: &out)
        }
    }

    private static func writeItem(_ item: Node, pad: String, indent: Int, into out: inout String) {
        switch item {
        case .scalar(let text):
            out += pad + "- " + text + "\n"
        case .mapping(let entries) where !entries.isEmpty:
            // `- first: value`, the other entries under it.
            var nested = ""
            Self.write(item, indent: indent + 2, into: &nested)
            out += pad + "- " + nested.dropFirst(indent + 2)
        case .sequence(let items) where !items.isEmpty:
            var nested = ""
            Self.write(item, indent: indent + 2, into: &nested)
            out += pad + "- " + nested.dropFirst(indent + 2)
        case .mapping:
            out += pad + "- {}\n"
        case .sequence:
            out += pad + "- []\n"
        }
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? {
        index >= 0 && index < self.count ? self[index] : nil
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(self.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
