// FoundationEssentials, not Foundation: the CLI links this module, and Foundation would bring ICU and its start-up
// cost into every `usher` run. JSONEncoder, JSONDecoder and Data are the same types in both.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Turns lines into requests and responses into lines: the one place that knows the NDJSON envelope.
public enum LineCodec {
    /// A line that could not be turned into a request: the error to answer with, and the id to echo when one could
    /// be read.
    public struct DecodingFailure: Error, Sendable, Hashable {
        public var id: RequestID?
        public var error: ResponseError
    }

    /// Decodes one request line (without its line terminator), `params` included.
    public static func decodeRequest(
        _ line: some Collection<UInt8>,
        maximumDepth: Int = 64,
        maximumMembers: Int = 512
    ) throws(DecodingFailure) -> Request {
        let head = try self.decodeHead(line, maximumDepth: maximumDepth, maximumMembers: maximumMembers)
        return Request(id: head.id, method: head.method, params: try head.decodeParams())
    }

    /// Reads a request line's envelope (`id`, `method`, where `params` is) without decoding `params`.
    ///
    /// The whole line is checked first, in linear time and without allocating: UTF-8, no NUL, the JSON grammar,
    /// nesting up to `maximumDepth`, and at most `maximumMembers` members in any object or array (refused as soon as
    /// the scan reaches one too many). So the work a line can cause before its sender's permission is known is
    /// bounded by its length, and `params` is decoded only for a request that is allowed to run.
    ///
    /// Inlinable, so that it is specialised for the caller's collection (the server's `ByteBufferView`) instead of
    /// going through generic metadata on every request.
    @inlinable
    public static func decodeHead(
        _ line: some Collection<UInt8>,
        maximumDepth: Int = 64,
        maximumMembers: Int = 512
    ) throws(DecodingFailure) -> RequestHead {
        let result: Result<RequestHead, DecodingFailure>? = line.withContiguousStorageIfAvailable { bytes in
            Result { () throws(DecodingFailure) in
                try Self.decodeHead(bytes, maximumDepth: maximumDepth, maximumMembers: maximumMembers)
            }
        }
        if let result { return try result.get() }
        return try Array(line).withUnsafeBufferPointer { bytes throws(DecodingFailure) in
            try Self.decodeHead(bytes, maximumDepth: maximumDepth, maximumMembers: maximumMembers)
        }
    }

    /// The members of the envelope, in the order `decodeHead` reads them.
    private static let envelopeKeys: [[UInt8]] = [Array("id".utf8), Array("method".utf8), Array("params".utf8)]

    @usableFromInline
    static func decodeHead(
        _ bytes: UnsafeBufferPointer<UInt8>,
        maximumDepth: Int,
        maximumMembers: Int
    ) throws(DecodingFailure) -> RequestHead {
        func invalid(_ message: String, id: RequestID? = nil) -> DecodingFailure {
            DecodingFailure(id: id, error: ResponseError(.invalidRequest, message))
        }
        let scanned: JSONScanner.FoundMembers
        do {
            scanned = try Self.scanEnvelope(
                bytes,
                keys: Self.envelopeKeys,
                maximumDepth: maximumDepth,
                maximumMembers: maximumMembers,
                names: ("request", "line")
            )
        } catch {
            throw DecodingFailure(id: nil, error: error)
        }
        var id: RequestID?
        if let found = scanned[0] {
            switch found.kind {
            case .null:
                id = nil
            case .string:
                guard let string = JSONScanner.string(bytes, found.range) else {
                    throw invalid("the line is not valid JSON")
                }
                id = .string(string)
            case .number:
                if let integer = Self.plainInteger(bytes[found.range]) {
                    id = .int(integer)
                    break
                }
                // Any other number is kept as its text, to be echoed exactly (issue 26: `123456789012345678901234567890`
                // came back as `1.2345678901234568e+29`). JSONShape has checked its grammar; one whose value is out of
                // a double's range (`1e999`) is refused, as `params` refuses it.
                let text = String(decoding: bytes[found.range], as: UTF8.self)
                guard let value = Double(text), value.isFinite else { throw invalid("the line is not valid JSON") }
                id = .number(text)
            default:
                throw invalid("id must be a string or a number, not \(found.kind.typeName)")
            }
        }
        guard let methodValue = scanned[1] else { throw invalid("method is required", id: id) }
        guard methodValue.kind == .string else {
            throw invalid("method must be a string, not \(methodValue.kind.typeName)", id: id)
        }
        guard let method = JSONScanner.string(bytes, methodValue.range) else {
            throw invalid("the line is not valid JSON")
        }
        guard let params = scanned[2], params.kind != .null else {
            return RequestHead(id: id, method: method, paramsBytes: nil)
        }
        guard params.kind == .object else {
            throw DecodingFailure(
                id: id,
                error: ResponseError(.invalidParams, "params must be an object, not \(params.kind.typeName)")
            )
        }
        return RequestHead(id: id, method: method, paramsBytes: Array(bytes[params.range]))
    }

    /// Checks that `bytes` is one JSON object within the limits, and finds where its members named `keys` are: the
    /// first step of reading a request line and a Varlink call (`VarlinkCall`). Every failure is `invalid_request`,
    /// naming the envelope as `names` says (`("request", "line")`, `("call", "message")`).
    static func scanEnvelope(
        _ bytes: UnsafeBufferPointer<UInt8>,
        keys: [[UInt8]],
        maximumDepth: Int,
        maximumMembers: Int,
        names: (envelope: String, frame: String)
    ) throws(ResponseError) -> JSONScanner.FoundMembers {
        if let problem = JSONShape.check(bytes, maximumDepth: maximumDepth) {
            throw ResponseError(.invalidRequest, problem)
        }
        let scanned: (kind: JSONScanner.Kind, found: JSONScanner.FoundMembers)
        do {
            scanned = try JSONScanner.scan(
                bytes,
                keys: keys,
                maximumDepth: maximumDepth,
                maximumMembers: maximumMembers
            )
        } catch .tooManyMembers(let kind) {
            let members = kind == .object ? "keys" : "elements"
            throw ResponseError(
                .invalidRequest,
                "an \(kind.typeName) in the \(names.envelope) has more than \(maximumMembers) \(members)"
            )
        } catch {
            throw ResponseError(.invalidRequest, "the \(names.frame) is not valid JSON")
        }
        guard scanned.kind == .object else {
            throw ResponseError(
                .invalidRequest,
                "a \(names.envelope) must be a JSON object, not \(scanned.kind.typeName)"
            )
        }
        return scanned.found
    }

    /// The value of a JSON number made only of an optional minus and digits (no fraction, no exponent) that fits in
    /// 64 bits: the ids clients send, read without a decoder. Nil for any other number, and for `-0`, whose text
    /// an integer could not echo.
    static func plainInteger(_ digits: UnsafeBufferPointer<UInt8>.SubSequence) -> Int64? {
        var index = digits.startIndex
        let negative = index < digits.endIndex && digits[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let count = digits.endIndex - index
        guard count > 0, count <= 19, count == 1 || digits[index] != UInt8(ascii: "0") else { return nil }
        var magnitude: UInt64 = 0
        while index < digits.endIndex {
            let digit = digits[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            // 19 digits can exceed UInt64 only past 9,999,999,999,999,999,999; the multiplication reports it.
            let (times10, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            magnitude = times10 + UInt64(digit)
            index += 1
        }
        if negative {
            guard magnitude != 0, magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return Int64(bitPattern: 0 &- magnitude)
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// Encodes a request line, terminated by `\n`.
    public static func encode(_ request: Request) -> [UInt8] {
        var object: [String: JSONValue] = ["method": .string(request.method)]
        if let id = request.id {
            switch id {
            case .int(let value): object["id"] = .int(value)
            case .double(let value): object["id"] = .double(value)
            case .string(let value): object["id"] = .string(value)
            case .number: object["id"] = .null
            }
        }
        if !request.params.values.isEmpty { object["params"] = .object(request.params.values) }
        // Sorted keys: `id` comes first.
        return self.splicing(request.id, into: self.line(JSONValue.object(object)), atStart: true)
    }

    /// Encodes a successful response line.
    public static func encodeResult(id: RequestID?, _ result: some Encodable) -> [UInt8] {
        // Sorted keys: `{"id":…,"result":…}`, the id first.
        self.splicing(id, into: self.line(ResultEnvelope(id: id.flatMap(\.encodable), result: result)), atStart: true)
    }

    /// Encodes an error response line.
    public static func encodeError(id: RequestID?, _ error: ResponseError) -> [UInt8] {
        // Sorted keys: `{"error":…,"id":…}`, the id last.
        self.splicing(id, into: self.line(ErrorEnvelope(id: id.flatMap(\.encodable), error: error)), atStart: false)
    }

    /// `line`, encoded with a `null` id in place of a `number` id, with that `null` replaced by the number's text:
    /// `JSONEncoder` cannot write a number as given text. The id is the line's first member (`atStart`) or its last.
    private static func splicing(_ id: RequestID?, into line: [UInt8], atStart: Bool) -> [UInt8] {
        guard case .number(let text) = id else { return line }
        let null = Array(#""id":null"#.utf8)
        let replacement = Array(#""id":"#.utf8) + Array(text.utf8)
        let range = atStart ? 1..<(1 + null.count) : (line.count - 2 - null.count)..<(line.count - 2)
        guard range.lowerBound >= 0, range.upperBound <= line.count, Array(line[range]) == null else { return line }
        var spliced = line
        spliced.replaceSubrange(range, with: replacement)
        return spliced
    }

    /// Encodes an event line.
    public static func encode(_ event: Event) -> [UInt8] {
        self.line(event)
    }

    /// Encodes any value as one line of JSON with sorted keys, terminated by `\n`.
    public static func line(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            var bytes = [UInt8](try encoder.encode(value))
            bytes.append(UInt8(ascii: "\n"))
            return bytes
        } catch {
            // Every wire type encodes; a failure here is a programming error, answered as `internal` rather than
            // crashing the daemon.
            return Array(#"{"error":{"code":"internal","message":"response could not be encoded"},"id":null}"#.utf8)
                + [UInt8(ascii: "\n")]
        }
    }

    /// A decoded line from the daemon: a response or an event.
    public enum Incoming: Sendable {
        case response(id: RequestID?, Result<JSONValue, ResponseError>)
        case event(Event)
    }

    /// Decodes a line the daemon sent, a result as `JSONValue`. Each line is decoded once (see `readIncoming`, which
    /// a client that knows the result's type uses instead, to decode it straight into that type).
    public static func decodeIncoming(_ line: some Collection<UInt8>) throws -> Incoming {
        let incoming = try self.readIncoming(line)
        switch incoming.kind {
        case .event: return .event(try incoming.decodeEvent())
        case .error: return .response(id: incoming.id, .failure(try incoming.decodeError()))
        case .result: return .response(id: incoming.id, .success(try incoming.decodeResult(as: JSONValue.self)))
        }
    }

    /// Re-decodes a result value into its typed form: for a value already decoded as `JSONValue`. A line's result
    /// decodes straight from its bytes with `IncomingLine.decodeResult(as:)`.
    public static func decode<Result: Decodable>(_ type: Result.Type, from value: JSONValue) throws -> Result {
        let data = try JSONEncoder().encode(value)
        return try JSONDecoder().decode(Result.self, from: data)
    }
}

extension RequestID {
    /// This id for `JSONEncoder`; nil for a `number`, whose text `LineCodec.splicing` writes instead.
    fileprivate var encodable: RequestID? {
        if case .number = self { return nil }
        return self
    }
}

private struct ResultEnvelope<Result: Encodable>: Encodable {
    var id: RequestID?
    var result: Result

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        try container.encode(self.id, forKey: AnyCodingKey("id"))
        try container.encode(self.result, forKey: AnyCodingKey("result"))
    }
}

private struct ErrorEnvelope: Encodable {
    var id: RequestID?
    var error: ResponseError

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        try container.encode(self.id, forKey: AnyCodingKey("id"))
        try container.encode(self.error, forKey: AnyCodingKey("error"))
    }
}
