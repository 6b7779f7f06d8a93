import Foundation

/// Turns lines into requests and responses into lines: the one place that knows the NDJSON envelope.
public enum LineCodec {
    /// A line that could not be turned into a request: the error to answer with, and the id to echo when one could
    /// be read.
    public struct DecodingFailure: Error, Sendable, Hashable {
        public var id: RequestID?
        public var error: ResponseError
    }

    /// Decodes one request line (without its line terminator).
    public static func decodeRequest(
        _ line: some Collection<UInt8>,
        maximumDepth: Int = 64
    ) throws(DecodingFailure)
        -> Request
    {
        if let problem = JSONShape.check(line, maximumDepth: maximumDepth) {
            throw DecodingFailure(id: nil, error: ResponseError(.invalidRequest, problem))
        }
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(line))
        } catch {
            throw DecodingFailure(id: nil, error: ResponseError(.invalidRequest, "the line is not valid JSON"))
        }
        guard case .object(let object) = value else {
            throw DecodingFailure(
                id: nil,
                error: ResponseError(.invalidRequest, "a request must be a JSON object, not \(value.typeName)")
            )
        }
        let id: RequestID?
        switch object["id"] {
        case .none, .some(.null): id = nil
        case .some(.int(let value)): id = .int(value)
        case .some(.double(let value)): id = .double(value)
        case .some(.string(let value)): id = .string(value)
        case .some(let other):
            throw DecodingFailure(
                id: nil,
                error: ResponseError(.invalidRequest, "id must be a string or a number, not \(other.typeName)")
            )
        }
        guard case .string(let method) = object["method"] else {
            let message =
                object["method"].map { "method must be a string, not \($0.typeName)" } ?? "method is required"
            throw DecodingFailure(id: id, error: ResponseError(.invalidRequest, message))
        }
        switch object["params"] {
        case .none, .some(.null):
            return Request(id: id, method: method)
        case .some(.object(let params)):
            return Request(id: id, method: method, params: Params(params))
        case .some(let other):
            throw DecodingFailure(
                id: id,
                error: ResponseError(.invalidParams, "params must be an object, not \(other.typeName)")
            )
        }
    }

    /// Encodes a request line, terminated by `\n`.
    public static func encode(_ request: Request) -> [UInt8] {
        var object: [String: JSONValue] = ["method": .string(request.method)]
        if let id = request.id {
            switch id {
            case .int(let value): object["id"] = .int(value)
            case .double(let value): object["id"] = .double(value)
            case .string(let value): object["id"] = .string(value)
            }
        }
        if !request.params.values.isEmpty { object["params"] = .object(request.params.values) }
        return self.line(JSONValue.object(object))
    }

    /// Encodes a successful response line.
    public static func encodeResult(id: RequestID?, _ result: some Encodable) -> [UInt8] {
        self.line(ResultEnvelope(id: id, result: result))
    }

    /// Encodes an error response line.
    public static func encodeError(id: RequestID?, _ error: ResponseError) -> [UInt8] {
        self.line(ErrorEnvelope(id: id, error: error))
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

    /// Decodes a line the daemon sent.
    public static func decodeIncoming(_ line: some Collection<UInt8>) throws -> Incoming {
        let data = Data(line)
        let decoder = JSONDecoder()
        let envelope = try decoder.decode(IncomingEnvelope.self, from: data)
        if envelope.event != nil {
            return .event(try decoder.decode(Event.self, from: data))
        }
        if let error = envelope.error {
            return .response(id: envelope.id, .failure(error))
        }
        return .response(id: envelope.id, .success(envelope.result ?? .null))
    }

    /// Re-decodes a result value into its typed form.
    public static func decode<Result: Decodable>(_ type: Result.Type, from value: JSONValue) throws -> Result {
        let data = try JSONEncoder().encode(value)
        return try JSONDecoder().decode(Result.self, from: data)
    }
}

private struct IncomingEnvelope: Decodable {
    var id: RequestID?
    var event: String?
    var result: JSONValue?
    var error: ResponseError?
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

/// A single pass over a line that rejects what the JSON decoder should never see: NUL bytes, invalid UTF-8 and
/// nesting deeper than the configured limit (deep nesting would otherwise cost stack in a recursive decoder).
enum JSONShape {
    static func check(_ bytes: some Collection<UInt8>, maximumDepth: Int) -> String? {
        var depth = 0
        var inString = false
        var escaped = false
        var continuationBytes = 0
        for byte in bytes {
            if continuationBytes > 0 {
                guard byte & 0xC0 == 0x80 else { return "the line is not valid UTF-8" }
                continuationBytes -= 1
                continue
            }
            switch byte {
            case 0x00:
                return "the line contains a NUL byte"
            case 0x80..<0xC2, 0xF5...0xFF:
                return "the line is not valid UTF-8"
            case 0xC2...0xDF:
                continuationBytes = 1
                escaped = false
                continue
            case 0xE0...0xEF:
                continuationBytes = 2
                escaped = false
                continue
            case 0xF0...0xF4:
                continuationBytes = 3
                escaped = false
                continue
            default:
                break
            }
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > maximumDepth { return "the request is nested deeper than \(maximumDepth) levels" }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
            default:
                break
            }
        }
        return continuationBytes > 0 ? "the line is not valid UTF-8" : nil
    }
}
