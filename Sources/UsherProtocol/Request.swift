// FoundationEssentials, not Foundation: the CLI links this module, and Foundation would bring ICU and its start-up
// cost into every `usher` run. JSONEncoder, JSONDecoder and Data are the same types in both.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The protocol version this module speaks (`hello` reports it).
public let protocolVersion = 1

/// A request's `id`: echoed back verbatim in its response. JSON allows a string or a number.
public enum RequestID: Sendable, Hashable, Codable, CustomStringConvertible {
    case int(Int64)
    /// A number id a client built as a `Double` (the daemon reads every number that is not a 64-bit integer as
    /// `number`).
    case double(Double)
    case string(String)
    /// A number id that is not a 64-bit integer (`1.5`, `1e30`, `123456789012345678901234567890`, `-0`), as the
    /// exact text it was sent in: the answer echoes that text byte for byte, so a client whose JSON library keeps
    /// big numbers exactly finds its id again. `LineCodec` and `WireWriter` write the text; the `Codable` conformance
    /// (which cannot write a number's text) writes the nearest `Double`.
    case number(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let int = try? container.decode(Int64.self) {
            self = .int(int)
        } else if let double = try? container.decode(Double.self) {
            self = .double(double)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .number(let text): try container.encode(Double(text) ?? 0)
        }
    }

    public var description: String {
        switch self {
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .string(let value): value
        case .number(let text): text
        }
    }
}

/// A request as read off the wire, before its parameters are interpreted.
public struct Request: Sendable, Hashable {
    public var id: RequestID?
    public var method: String
    public var params: Params

    public init(id: RequestID?, method: String, params: Params = Params()) {
        self.id = id
        self.method = method
        self.params = params
    }
}

/// A request line whose envelope has been read (see `LineCodec.decodeHead`): its id and method, with `params` not yet
/// decoded, so that a server can check the method and the sender's permission before it spends anything on them.
public struct RequestHead: Sendable, Hashable {
    public var id: RequestID?
    public var method: String
    /// The `params` object as it was sent (already checked: valid JSON within the limits); nil when absent or null.
    var paramsBytes: [UInt8]?

    init(id: RequestID?, method: String, paramsBytes: [UInt8]?) {
        self.id = id
        self.method = method
        self.paramsBytes = paramsBytes
    }

    /// Decodes `params`. A value that is valid JSON grammar but not representable (a number out of range, a lone
    /// UTF-16 surrogate) makes the line invalid, as it always did.
    public func decodeParams() throws(LineCodec.DecodingFailure) -> Params {
        guard let bytes = self.paramsBytes else { return Params() }
        if let flat = bytes.withUnsafeBufferPointer(FlatParams.parse) { return Params(flat) }
        guard case .object(let values)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            throw LineCodec.DecodingFailure(
                id: nil,
                error: ResponseError(.invalidRequest, "the line is not valid JSON")
            )
        }
        return Params(values)
    }

    /// A top-level string member of `params`, read without decoding the rest (for the record of a refused request).
    public func peekParam(_ key: String) -> String? {
        guard let bytes = self.paramsBytes else { return nil }
        return bytes.withUnsafeBufferPointer { buffer in
            guard
                let found = try? JSONScanner.scan(
                    buffer,
                    keys: [Array(key.utf8)],
                    maximumDepth: .max,
                    maximumMembers: .max
                ),
                let value = found.found[0], value.kind == .string
            else { return nil }
            return JSONScanner.string(buffer, value.range)
        }
    }
}

/// A typed request: the parameters of one method and the type of its result. Every conforming type is generated from
/// the interface (varlink/io.usher.Session.varlink, by the UsherInterfacePlugin); what the interface cannot say is its
/// hand-written `validate(_:)`.
public protocol UsherRequest: Sendable {
    associatedtype Result: Codable & Sendable
    static var method: Method { get }
    /// Interprets wire parameters, throwing `invalid_params` with a precise message (`ParamsDecoder`).
    init(params: Params) throws(ResponseError)
    /// The wire parameters of this request.
    var params: Params { get }
    /// Checks (and where the wire allows two spellings, normalises) what the interface cannot say: ranges, lengths,
    /// parameters that go together. Called by `init(params:)` after every field is decoded, with the parameters it
    /// read. The default checks nothing.
    mutating func validate(_ params: Params) throws(ResponseError)
}

extension UsherRequest {
    public var request: Request { Request(id: nil, method: Self.method.rawValue, params: self.params) }

    public mutating func validate(_ params: Params) throws(ResponseError) {}
}

/// The `params` object of a request, as sent: `ParamsDecoder` reads it into a typed request, `ParamsEncoder` writes one.
public struct Params: Sendable, Hashable {
    public var values: [String: JSONValue]

    public init(_ values: [String: JSONValue] = [:]) {
        self.values = values
    }

    public subscript(key: String) -> JSONValue? {
        get { self.values[key] }
        set { self.values[key] = newValue }
    }
}
