import Foundation
import Testing
import UsherProtocol

// The wire format, pinned byte for byte: sorted keys, no escaped slashes, every `UserInfo` key present, one `\n`.
//
// Each golden line is also decoded back (with a plain `JSONDecoder`, and as a client would with
// `LineCodec.decodeIncoming`) and must give the original value.

struct ResultLine<R: Decodable>: Decodable {
    var id: RequestID?
    var result: R
}

struct ErrorLine: Decodable {
    var id: RequestID?
    var error: ResponseError
}

/// Checks the exact line `encodeResult` writes, and that it reads back as the same value.
func expectResult<R: Codable & Equatable>(
    _ result: R,
    id: RequestID?,
    _ expected: String,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let bytes = LineCodec.encodeResult(id: id, result)
    #expect(text(bytes) == expected, sourceLocation: sourceLocation)

    let decoded = try JSONDecoder().decode(ResultLine<R>.self, from: Data(expected.utf8))
    #expect(decoded.id == id, sourceLocation: sourceLocation)
    #expect(decoded.result == result, sourceLocation: sourceLocation)

    guard
        case .response(let incomingID, .success(let value)) = try LineCodec.decodeIncoming(withoutTerminator(expected))
    else {
        Issue.record("not classified as a successful response", sourceLocation: sourceLocation)
        return
    }
    #expect(incomingID == id, sourceLocation: sourceLocation)
    #expect(try LineCodec.decode(R.self, from: value) == result, sourceLocation: sourceLocation)
    // The untyped value writes the very same bytes: nothing is lost or reordered on the way through `JSONValue`.
    #expect(text(LineCodec.encodeResult(id: id, value)) == expected, sourceLocation: sourceLocation)
}

/// Checks the exact line `encodeError` writes, and that it reads back as the same error.
func expectError(
    _ error: ResponseError,
    id: RequestID?,
    _ expected: String,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(text(LineCodec.encodeError(id: id, error)) == expected, sourceLocation: sourceLocation)

    let decoded = try JSONDecoder().decode(ErrorLine.self, from: Data(expected.utf8))
    #expect(decoded.id == id, sourceLocation: sourceLocation)
    #expect(decoded.error == error, sourceLocation: sourceLocation)

    guard
        case .response(let incomingID, .failure(let incoming)) = try LineCodec.decodeIncoming(
            withoutTerminator(expected)
        )
    else {
        Issue.record("not classified as an error response", sourceLocation: sourceLocation)
        return
    }
    #expect(incomingID == id, sourceLocation: sourceLocation)
    #expect(incoming == error, sourceLocation: sourceLocation)
}

/// Checks the exact line `encode(_: Event)` writes, and that it reads back as the same event.
func expectEvent(
    _ event: Event,
    _ expected: String,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let bytes = LineCodec.encode(event)
    #expect(text(bytes) == expected, sourceLocation: sourceLocation)

    #expect(try JSONDecoder().decode(Event.self, from: Data(expected.utf8)) == event, sourceLocation: sourceLocation)

    guard case .event(let incoming) = try LineCodec.decodeIncoming(withoutTerminator(expected)) else {
        Issue.record("not classified as an event", sourceLocation: sourceLocation)
        return
    }
    #expect(incoming == event, sourceLocation: sourceLocation)

    let value = try JSONDecoder().decode(JSONValue.self, from: Data(expected.utf8))
    #expect(text(LineCodec.line(value)) == expected, sourceLocation: sourceLocation)
}
