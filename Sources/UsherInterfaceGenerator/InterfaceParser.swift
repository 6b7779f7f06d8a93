/// A Varlink interface definition (https://varlink.org/Interface-Definition), as far as `io.usher.Session` uses it:
/// the interface's name, its types (structs and enums), methods, errors, and the comments written just before each
/// declaration, field and enum value, which become the generated code's documentation.
struct Interface {
    var name: String
    var documentation: [String]
    var types: [TypeDeclaration] = []
    var methods: [MethodDeclaration] = []
    var errors: [ErrorDeclaration] = []
}

indirect enum TypeReference: Equatable {
    case string, int, bool, float, object
    case named(String)
    case optional(TypeReference)
    case array(TypeReference)
    case dictionary(TypeReference)
    case enumeration([EnumValue])
    case structure([Field])
}

struct EnumValue: Equatable {
    var name: String
    var documentation: [String]
}

struct Field: Equatable {
    var name: String
    var type: TypeReference
    var documentation: [String]
}

struct TypeDeclaration {
    var name: String
    var documentation: [String]
    var body: TypeReference
}

struct MethodDeclaration {
    var name: String
    var documentation: [String]
    var input: [Field]
    var output: [Field]
}

struct ErrorDeclaration {
    var name: String
    var documentation: [String]
    var fields: [Field]
}

struct ParseError: Error, CustomStringConvertible {
    var line: Int
    var message: String
    var description: String { "line \(self.line): \(self.message)" }
}

/// A recursive-descent parser over the definition's tokens. Comments are kept: the run of `#` lines just before a
/// token is that token's documentation.
struct InterfaceParser {
    private struct Token {
        var text: String
        var line: Int
        var documentation: [String]
    }

    private var tokens: [Token] = []
    private var position = 0

    init(_ source: String) {
        var pending: [String] = []
        var line = 1
        var characters = Array(source.unicodeScalars)[...]
        while let first = characters.first {
            if first == "\n" {
                line += 1
                characters.removeFirst()
            } else if first == " " || first == "\t" || first == "\r" {
                characters.removeFirst()
            } else if first == "#" {
                let comment = characters.prefix { $0 != "\n" }
                characters.removeFirst(comment.count)
                var text = String(String.UnicodeScalarView(comment.dropFirst()))
                if text.hasPrefix(" ") { text.removeFirst() }
                pending.append(text)
            } else if first == "-", characters.dropFirst().first == ">" {
                characters.removeFirst(2)
                self.tokens.append(Token(text: "->", line: line, documentation: pending))
                pending = []
            } else if Self.isWordCharacter(first) {
                let word = characters.prefix(while: Self.isWordCharacter)
                characters.removeFirst(word.count)
                self.tokens.append(
                    Token(text: String(String.UnicodeScalarView(word)), line: line, documentation: pending)
                )
                pending = []
            } else {
                characters.removeFirst()
                self.tokens.append(Token(text: String(first), line: line, documentation: pending))
                pending = []
            }
        }
    }

    private static func isWordCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "."
    }

    mutating func parse() throws(ParseError) -> Interface {
        let keyword = try self.expect("interface")
        var interface = Interface(name: try self.word(), documentation: keyword.documentation)
        while let token = self.peek() {
            self.position += 1
            switch token.text {
            case "type":
                let name = try self.word()
                try self.expect("(")
                interface.types.append(
                    TypeDeclaration(name: name, documentation: token.documentation, body: try self.fieldsOrValues())
                )
            case "method":
                let name = try self.word()
                try self.expect("(")
                let input = try self.fields()
                try self.expect("->")
                try self.expect("(")
                let output = try self.fields()
                interface.methods.append(
                    MethodDeclaration(name: name, documentation: token.documentation, input: input, output: output)
                )
            case "error":
                let name = try self.word()
                try self.expect("(")
                interface.errors.append(
                    ErrorDeclaration(name: name, documentation: token.documentation, fields: try self.fields())
                )
            default:
                throw ParseError(line: token.line, message: "expected type, method or error, not \(token.text)")
            }
        }
        return interface
    }

    /// After `(`: a struct's fields or an enum's values, up to and with the `)`.
    private mutating func fieldsOrValues() throws(ParseError) -> TypeReference {
        if self.peek()?.text == ")" {
            self.position += 1
            return .structure([])
        }
        if self.peek(1)?.text == ":" { return .structure(try self.fields()) }
        var values: [EnumValue] = []
        repeat {
            let token = try self.next()
            values.append(EnumValue(name: token.text, documentation: token.documentation))
        } while try self.separator()
        return .enumeration(values)
    }

    /// After `(`: `name: type` pairs separated by commas, up to and with the `)`.
    private mutating func fields() throws(ParseError) -> [Field] {
        var fields: [Field] = []
        if self.peek()?.text == ")" {
            self.position += 1
            return fields
        }
        repeat {
            let name = try self.next()
            try self.expect(":")
            fields.append(Field(name: name.text, type: try self.type(), documentation: name.documentation))
        } while try self.separator()
        return fields
    }

    /// `,` (true: more follow) or `)` (false: the list ended).
    private mutating func separator() throws(ParseError) -> Bool {
        let token = try self.next()
        switch token.text {
        case ",": return true
        case ")": return false
        default: throw ParseError(line: token.line, message: "expected , or ), not \(token.text)")
        }
    }

    private mutating func type() throws(ParseError) -> TypeReference {
        let token = try self.next()
        switch token.text {
        case "?": return .optional(try self.type())
        case "[":
            if self.peek()?.text == "]" {
                self.position += 1
                return .array(try self.type())
            }
            try self.expect("string")
            try self.expect("]")
            return .dictionary(try self.type())
        case "(": return try self.fieldsOrValues()
        case "string": return .string
        case "int": return .int
        case "bool": return .bool
        case "float": return .float
        case "object": return .object
        default:
            guard token.text.first?.isUppercase == true else {
                throw ParseError(line: token.line, message: "unknown type \(token.text)")
            }
            return .named(token.text)
        }
    }

    private func peek(_ offset: Int = 0) -> Token? {
        self.position + offset < self.tokens.count ? self.tokens[self.position + offset] : nil
    }

    private mutating func next() throws(ParseError) -> Token {
        guard let token = self.peek() else {
            throw ParseError(line: self.tokens.last?.line ?? 1, message: "unexpected end of the definition")
        }
        self.position += 1
        return token
    }

    @discardableResult
    private mutating func expect(_ text: String) throws(ParseError) -> Token {
        let token = try self.next()
        guard token.text == text else {
            throw ParseError(line: token.line, message: "expected \(text), not \(token.text)")
        }
        return token
    }

    private mutating func word() throws(ParseError) -> String {
        try self.next().text
    }
}
