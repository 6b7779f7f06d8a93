// FoundationEssentials, not Foundation: the CLI links this module (see LineCodec.swift).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A line from the daemon, read only as far as its envelope: what it is, its id, and where its `result` or `error` is.
///
/// `LineCodec.readIncoming` finds the envelope's members with `JSONScanner`, a validating pass that decodes nothing,
/// so each line is decoded once: a response's result straight from the line's bytes into the type the caller expects
/// (`decodeResult(as:)`), an event into `Event`. A client reads a line here, matches the response to its request by
/// `kind` and `id`, and leaves the decoding of the result to the caller that knows its type.
public struct IncomingLine: Sendable {
    /// What a line is, read from the envelope's keys.
    public enum Kind: Sendable, Hashable {
        /// A successful response; an absent or null `result` reads as `null`.
        case result
        /// An error response.
        case error
        /// An event the daemon pushes after `subscribe`.
        case event
    }

    /// What the line is.
    public let kind: Kind

    /// The response's id: nil for an event, and for an error about a line the daemon could not read.
    public let id: RequestID?

    /// The whole line, without its terminator.
    private let data: Data

    /// Where the value of `result` (for `.result`) or `error` (for `.error`) is in `data`; nil when absent, and for
    /// an event, which decodes whole.
    private let member: Range<Int>?

    fileprivate init(kind: Kind, id: RequestID?, data: Data, member: Range<Int>?) {
        self.kind = kind
        self.id = id
        self.data = data
        self.member = member
    }

    /// Decodes the result of a `.result` line, from its bytes, as `type`.
    public func decodeResult<Result: Decodable>(as type: Result.Type = Result.self) throws -> Result {
        guard self.kind == .result else {
            throw DecodingError.typeMismatch(
                type,
                DecodingError.Context(codingPath: [], debugDescription: "the line is not a successful response")
            )
        }
        // A slice of `data`, which shares its storage: nothing is copied.
        return try JSONDecoder().decode(type, from: self.member.map { self.data[$0] } ?? Self.null)
    }

    /// Decodes the error of an `.error` line.
    public func decodeError() throws -> ResponseError {
        guard self.kind == .error, let member = self.member else {
            throw DecodingError.typeMismatch(
                ResponseError.self,
                DecodingError.Context(codingPath: [], debugDescription: "the line is not an error response")
            )
        }
        return try JSONDecoder().decode(ResponseError.self, from: self.data[member])
    }

    /// Decodes the event of an `.event` line; an event of a kind this version does not know throws.
    public func decodeEvent() throws -> Event {
        guard self.kind == .event else {
            throw DecodingError.typeMismatch(
                Event.self,
                DecodingError.Context(codingPath: [], debugDescription: "the line is not an event")
            )
        }
        return try JSONDecoder().decode(Event.self, from: self.data)
    }

    private static let null = Data("null".utf8)
}

extension LineCodec {
    /// The members of a line from the daemon that tell what it is, by position in `FoundMembers`.
    private static let incomingKeys: [[UInt8]] = [
        Array("id".utf8), Array("event".utf8), Array("result".utf8), Array("error".utf8),
    ]

    /// Reads a line the daemon sent (without its terminator) as far as its envelope, decoding nothing else.
    ///
    /// A line with a string `event` is an event; otherwise a non-null `error` makes it an error response, and
    /// anything else is a successful response. The whole line is checked against the JSON grammar.
    ///
    /// - Throws: `DecodingError` when the line is not JSON, not an object, or its `id`, `event` or `error` has the
    ///   wrong type.
    public static func readIncoming(_ line: some Collection<UInt8>) throws -> IncomingLine {
        let data = Data(line)
        return try data.withUnsafeBytes { raw in
            try Self.readIncoming(data, raw.bindMemory(to: UInt8.self))
        }
    }

    private static func readIncoming(_ data: Data, _ bytes: UnsafeBufferPointer<UInt8>) throws -> IncomingLine {
        func wrongType(_ type: Any.Type, _ key: String?, _ message: String) -> DecodingError {
            .typeMismatch(
                type,
                DecodingError.Context(codingPath: key.map { [AnyCodingKey($0)] } ?? [], debugDescription: message)
            )
        }
        // The decoder's own nesting limit; no member limit, since the daemon is trusted with its answers' size.
        let depth = 512
        let scanned: (kind: JSONScanner.Kind, found: JSONScanner.FoundMembers)
        do {
            scanned = try JSONScanner.scan(bytes, keys: Self.incomingKeys, maximumDepth: depth, maximumMembers: .max)
        } catch {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: "not JSON"))
        }
        guard scanned.kind == .object else {
            throw wrongType([String: JSONValue].self, nil, "a line must be an object, not \(scanned.kind.typeName)")
        }
        if let event = scanned.found[1], event.kind != .null {
            guard event.kind == .string else { throw wrongType(String.self, "event", "event must be a string") }
            return IncomingLine(kind: .event, id: nil, data: data, member: nil)
        }
        let id = try Self.incomingID(bytes, scanned.found[0], data: data)
        if let error = scanned.found[3], error.kind != .null {
            return IncomingLine(kind: .error, id: id, data: data, member: error.range)
        }
        return IncomingLine(kind: .result, id: id, data: data, member: scanned.found[2]?.range)
    }

    /// The id at `found`: a plain integer or a string read without a decoder, any other number decoded as
    /// `RequestID` decodes it.
    private static func incomingID(
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ found: JSONScanner.Found?,
        data: Data
    ) throws -> RequestID? {
        guard let found, found.kind != .null else { return nil }
        switch found.kind {
        case .number:
            if let integer = Self.plainInteger(bytes[found.range]) { return .int(integer) }
            return try JSONDecoder().decode(RequestID.self, from: data[found.range])
        case .string:
            guard let string = JSONScanner.string(bytes, found.range) else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: [AnyCodingKey("id")], debugDescription: "not a string")
                )
            }
            return .string(string)
        default:
            throw DecodingError.typeMismatch(
                RequestID.self,
                DecodingError.Context(
                    codingPath: [AnyCodingKey("id")],
                    debugDescription: "id must be a string or a number, not \(found.kind.typeName)"
                )
            )
        }
    }
}
