/// Reading YAML's flow style, which JSON is: the collections a kubeconfig writes as `{}` and `[]`, and a kubeconfig
/// written as JSON.
extension Kubeconfig {
    /// JSON's and YAML's flow style: `{a: b, "c": [1, 2]}`.
    struct FlowReader {
        var text: [Character]
        var line: Int
        var position = 0

        /// Whether a flow collection's brackets are all closed (outside quoted scalars), read a line at a time: each
        /// line once, however many lines the collection takes (a JSON kubeconfig is one collection of thousands).
        /// Asking of the whole text again at each line took minutes for a JSON kubeconfig of 6,000 lines. A state
        /// machine rather than `closingQuote`, because a quoted scalar may go on over the next line.
        struct Brackets {
            private var depth = 0
            private var quote: Character?
            private var escaped = false

            var areClosed: Bool { self.depth <= 0 && self.quote == nil }

            mutating func read(_ text: some StringProtocol) {
                for character in text {
                    if let open = self.quote {
                        if self.escaped {
                            self.escaped = false
                        } else if open == "\"" && character == "\\" {
                            self.escaped = true
                        } else if character == open {
                            self.quote = nil  // '' inside single quotes closes here and opens again at once.
                        }
                        continue
                    }
                    switch character {
                    case "\"", "'": self.quote = character
                    case "[", "{": self.depth += 1
                    case "]", "}": self.depth -= 1
                    default: break
                    }
                }
            }
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
                while try !self.closes(opening: "{", closing: "}") {
                    let key = try self.scalar(stoppingAtColon: true)
                    self.skipSpaces()
                    guard self.position < self.text.count, self.text[self.position] == ":" else {
                        throw self.problem("a key without a colon")
                    }
                    self.position += 1
                    entries.append(Entry(key: key, value: try self.value()))
                    try self.separator(closing: "}")
                }
                return .mapping(entries)
            case "[":
                self.position += 1
                var items: [Node] = []
                while try !self.closes(opening: "[", closing: "]") {
                    items.append(try self.value())
                    try self.separator(closing: "]")
                }
                return .sequence(items)
            case "&", "*", "!":
                throw self.problem("an anchor, alias or tag")
            default:
                return .scalar(try self.scalar(stoppingAtColon: false))
            }
        }

        /// Whether the collection `opening` began ends here, spaces aside (its `closing` bracket is then read); the
        /// end of the text before it is an error.
        mutating func closes(opening: Character, closing: Character) throws(Problem) -> Bool {
            self.skipSpaces()
            guard self.position < self.text.count else { throw self.problem("an unclosed \(opening)") }
            guard self.text[self.position] == closing else { return false }
            self.position += 1
            return true
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

        /// A scalar's text, quotes and all.
        mutating func scalar(stoppingAtColon: Bool) throws(Problem) -> String {
            self.skipSpaces()
            let start = self.position
            if let quote = self.text[self.position...].first, quote == "\"" || quote == "'" {
                guard let close = Kubeconfig.closingQuote(self.text[self.position...]) else {
                    throw self.problem("an unclosed quote")
                }
                self.position = close + 1
                return String(self.text[start..<self.position])
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
            // Up to the spaces before the comma or bracket (those before it were skipped above).
            var end = self.position
            while end > start, self.text[end - 1] == " " { end -= 1 }
            guard end > start else { throw self.problem("an empty value") }
            return String(self.text[start..<end])
        }
    }
}
