/// A validating pass over one JSON text (RFC 8259) that records where chosen members of the top-level object are.
struct JSONScanner {
    enum Kind: Sendable, Hashable {
        case object, array, string, number, boolean, null

        var typeName: String {
            switch self {
            case .object: "object"
            case .array: "array"
            case .string: "string"
            case .number: "number"
            case .boolean: "boolean"
            case .null: "null"
            }
        }
    }

    enum Failure: Error, Hashable {
        case invalid
        case tooManyMembers(Kind)
    }

    /// Where a member's value is, and what it is.
    struct Found: Sendable, Hashable {
        var range: Range<Int>
        var kind: Kind
    }

    /// The members found for up to five wanted keys, by the keys' positions: held inline, so that scanning a
    /// line allocates nothing. (A request line wants three; a line from the daemon four; a Varlink call five.)
    struct FoundMembers: Sendable {
        static let capacity = 5
        private var first: Found?
        private var second: Found?
        private var third: Found?
        private var fourth: Found?
        private var fifth: Found?

        subscript(position: Int) -> Found? {
            get {
                switch position {
                case 0: self.first
                case 1: self.second
                case 2: self.third
                case 3: self.fourth
                default: self.fifth
                }
            }
            set {
                switch position {
                case 0: self.first = newValue
                case 1: self.second = newValue
                case 2: self.third = newValue
                case 3: self.fourth = newValue
                default: self.fifth = newValue
                }
            }
        }
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private let maximumDepth: Int
    private let maximumMembers: Int
    private var index = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int, maximumMembers: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        self.maximumMembers = maximumMembers
    }

    /// Checks that `bytes` is exactly one JSON value within the limits. When it is an object, returns where the
    /// first member named each of `keys` (UTF-8, as written on the wire) is (JSON leaves duplicates undefined; the
    /// first one wins, as in the decoder).
    static func scan(
        _ bytes: UnsafeBufferPointer<UInt8>,
        keys wanted: [[UInt8]],
        maximumDepth: Int,
        maximumMembers: Int
    ) throws(Failure) -> (kind: Kind, found: FoundMembers) {
        precondition(wanted.count <= FoundMembers.capacity)
        var scanner = JSONScanner(bytes, maximumDepth: maximumDepth, maximumMembers: maximumMembers)
        var found = FoundMembers()
        let kind: Kind
        scanner.skipWhitespace()
        if scanner.peek == UInt8(ascii: "{") {
            try scanner.object(depth: 1) { key, value in
                guard let position = Self.position(of: key, in: wanted, bytes), found[position] == nil else { return }
                found[position] = value
            }
            kind = .object
        } else {
            kind = try scanner.value(depth: 0).kind
        }
        scanner.skipWhitespace()
        guard scanner.index == bytes.count else { throw .invalid }
        return (kind, found)
    }

    /// Decodes the JSON string at `range` (quotes included); nil when it holds an escape that is not a character
    /// (a lone UTF-16 surrogate). `bytes` must have passed `JSONShape.check` (valid UTF-8), as every line has before
    /// it is scanned.
    static func string(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String? {
        let body = UnsafeBufferPointer(rebasing: bytes[(range.lowerBound + 1)..<(range.upperBound - 1)])
        // Valid UTF-8 already: decoding cannot repair anything, and it is the stdlib's specialised fast path.
        guard body.contains(UInt8(ascii: "\\")) else { return String(decoding: body, as: UTF8.self) }
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        var position = 0
        func flush() -> Bool {
            guard !utf8.isEmpty else { return true }
            guard let text = String(validating: utf8, as: UTF8.self) else { return false }
            scalars.append(contentsOf: text.unicodeScalars)
            utf8.removeAll(keepingCapacity: true)
            return true
        }
        func hex(at offset: Int) -> UInt32? {
            guard offset + 4 <= body.count else { return nil }
            var value: UInt32 = 0
            for byte in body[offset..<(offset + 4)] {
                guard let digit = Self.hexDigit(byte) else { return nil }
                value = value << 4 | digit
            }
            return value
        }
        while position < body.count {
            let byte = body[position]
            guard byte == UInt8(ascii: "\\") else {
                utf8.append(byte)
                position += 1
                continue
            }
            guard flush(), position + 1 < body.count else { return nil }
            let escape = body[position + 1]
            position += 2
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{8}")
            case UInt8(ascii: "f"): scalars.append("\u{C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                guard let unit = hex(at: position) else { return nil }
                position += 4
                var codePoint = unit
                if (0xD800...0xDBFF).contains(unit) {
                    guard position + 1 < body.count, body[position] == UInt8(ascii: "\\"),
                        body[position + 1] == UInt8(ascii: "u"), let low = hex(at: position + 2),
                        (0xDC00...0xDFFF).contains(low)
                    else { return nil }
                    position += 6
                    codePoint = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(codePoint) else { return nil }
                scalars.append(scalar)
            default:
                return nil
            }
        }
        guard flush() else { return nil }
        return String(scalars)
    }

    // MARK: - Grammar

    private var peek: UInt8? { self.index < self.bytes.count ? self.bytes[self.index] : nil }

    private mutating func skipWhitespace() {
        while let byte = self.peek,
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
                || byte == UInt8(ascii: "\r")
        {
            self.index += 1
        }
    }

    private mutating func expect(_ byte: UInt8) throws(Failure) {
        self.skipWhitespace()
        guard self.peek == byte else { throw .invalid }
        self.index += 1
    }

    private mutating func value(depth: Int) throws(Failure) -> Found {
        self.skipWhitespace()
        let start = self.index
        guard let byte = self.peek else { throw .invalid }
        let kind: Kind
        switch byte {
        case UInt8(ascii: "{"):
            try self.object(depth: depth + 1) { _, _ in }
            kind = .object
        case UInt8(ascii: "["):
            try self.array(depth: depth + 1)
            kind = .array
        case UInt8(ascii: "\""):
            try self.string()
            kind = .string
        case UInt8(ascii: "t"):
            try self.literal("true")
            kind = .boolean
        case UInt8(ascii: "f"):
            try self.literal("false")
            kind = .boolean
        case UInt8(ascii: "n"):
            try self.literal("null")
            kind = .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try self.number()
            kind = .number
        default:
            throw .invalid
        }
        return Found(range: start..<self.index, kind: kind)
    }

    private mutating func object(
        depth: Int,
        _ member: (_ key: Range<Int>, _ value: Found) -> Void
    ) throws(Failure) {
        guard depth <= self.maximumDepth else { throw .invalid }
        try self.expect(UInt8(ascii: "{"))
        self.skipWhitespace()
        if self.peek == UInt8(ascii: "}") {
            self.index += 1
            return
        }
        var count = 0
        while true {
            count += 1
            guard count <= self.maximumMembers else { throw .tooManyMembers(.object) }
            self.skipWhitespace()
            let keyStart = self.index
            guard self.peek == UInt8(ascii: "\"") else { throw .invalid }
            try self.string()
            let key = keyStart..<self.index
            try self.expect(UInt8(ascii: ":"))
            let value = try self.value(depth: depth)
            member(key, value)
            self.skipWhitespace()
            switch self.peek {
            case UInt8(ascii: ","): self.index += 1
            case UInt8(ascii: "}"):
                self.index += 1
                return
            default: throw .invalid
            }
        }
    }

    private mutating func array(depth: Int) throws(Failure) {
        guard depth <= self.maximumDepth else { throw .invalid }
        try self.expect(UInt8(ascii: "["))
        self.skipWhitespace()
        if self.peek == UInt8(ascii: "]") {
            self.index += 1
            return
        }
        var count = 0
        while true {
            count += 1
            guard count <= self.maximumMembers else { throw .tooManyMembers(.array) }
            _ = try self.value(depth: depth)
            self.skipWhitespace()
            switch self.peek {
            case UInt8(ascii: ","): self.index += 1
            case UInt8(ascii: "]"):
                self.index += 1
                return
            default: throw .invalid
            }
        }
    }

    /// A string: no raw control characters, only the escapes JSON defines. (UTF-8 was checked by `JSONShape`.)
    private mutating func string() throws(Failure) {
        self.index += 1
        while let byte = self.peek {
            self.index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return
            case UInt8(ascii: "\\"):
                guard let escape = self.peek else { throw .invalid }
                self.index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"):
                    for _ in 0..<4 {
                        guard let digit = self.peek, Self.hexDigit(digit) != nil else { throw .invalid }
                        self.index += 1
                    }
                default:
                    throw .invalid
                }
            case 0x00..<0x20:
                throw .invalid
            default:
                break
            }
        }
        throw .invalid
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() throws(Failure) {
        if self.peek == UInt8(ascii: "-") { self.index += 1 }
        guard let first = self.peek, Self.isDigit(first) else { throw .invalid }
        self.index += 1
        if first != UInt8(ascii: "0") { self.digits() }
        if self.peek == UInt8(ascii: ".") {
            self.index += 1
            guard let digit = self.peek, Self.isDigit(digit) else { throw .invalid }
            self.digits()
        }
        if self.peek == UInt8(ascii: "e") || self.peek == UInt8(ascii: "E") {
            self.index += 1
            if self.peek == UInt8(ascii: "+") || self.peek == UInt8(ascii: "-") { self.index += 1 }
            guard let digit = self.peek, Self.isDigit(digit) else { throw .invalid }
            self.digits()
        }
    }

    private mutating func digits() {
        while let byte = self.peek, Self.isDigit(byte) { self.index += 1 }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard self.index + expected.count <= self.bytes.count else { throw .invalid }
        for (offset, byte) in expected.enumerated() where self.bytes[self.index + offset] != byte {
            throw .invalid
        }
        self.index += expected.count
    }

    /// Which of `wanted` the key at `range` is: compared byte for byte, or decoded first when it holds escapes
    /// (`"\u0069d"` is `"id"`).
    private static func position(
        of range: Range<Int>,
        in wanted: [[UInt8]],
        _ bytes: UnsafeBufferPointer<UInt8>
    ) -> Int? {
        let raw = UnsafeBufferPointer(rebasing: bytes[(range.lowerBound + 1)..<(range.upperBound - 1)])
        if !raw.contains(UInt8(ascii: "\\")) {
            return wanted.firstIndex { $0.elementsEqual(raw) }
        }
        guard let key = Self.string(bytes, range) else { return nil }
        return wanted.firstIndex { $0.elementsEqual(key.utf8) }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
