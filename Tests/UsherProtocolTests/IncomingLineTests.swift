import Testing
import UsherProtocol

/// `LineCodec.readIncoming`: a line from the daemon is classified from its envelope's keys alone, and its result is
/// then decoded once, from the line's bytes, into the type the caller expects.
@Suite("Incoming lines")
struct IncomingLineTests {
    @Test func aResultDecodesStraightIntoItsType() throws {
        let line = try LineCodec.readIncoming(Array(#"{"id":7,"result":{"generation":3,"user":null}}"#.utf8))
        #expect(line.kind == .result)
        #expect(line.id == .int(7))
        #expect(
            try line.decodeResult(as: CurrentUserRequest.Result.self)
                == CurrentUserRequest.Result(generation: 3, user: nil)
        )
        #expect(try line.decodeResult(as: JSONValue.self) == .object(["generation": .int(3), "user": .null]))
        #expect(throws: DecodingError.self) { try line.decodeResult(as: ListUsersRequest.Result.self) }
        #expect(throws: DecodingError.self) { try line.decodeError() }
    }

    @Test func anErrorIsAnErrorWhateverElseTheLineCarries() throws {
        let line = try LineCodec.readIncoming(
            Array(#"{"error":{"code":"user_not_found","message":"no such user"},"id":"a","result":1}"#.utf8)
        )
        #expect(line.kind == .error)
        #expect(line.id == .string("a"))
        #expect(try line.decodeError() == ResponseError(.userNotFound, "no such user"))
        #expect(throws: DecodingError.self) { try line.decodeResult(as: JSONValue.self) }
    }

    @Test func idsAreReadAsTheDecoderReadsThem() throws {
        #expect(try LineCodec.readIncoming(Array(#"{"id":null,"result":1}"#.utf8)).id == nil)
        #expect(try LineCodec.readIncoming(Array(#"{"id":-12,"result":1}"#.utf8)).id == .int(-12))
        #expect(try LineCodec.readIncoming(Array(#"{"id":1.5,"result":1}"#.utf8)).id == .double(1.5))
        #expect(try LineCodec.readIncoming(Array(#"{"id":"\u0041","result":1}"#.utf8)).id == .string("A"))
        #expect(throws: DecodingError.self) { try LineCodec.readIncoming(Array(#"{"id":true,"result":1}"#.utf8)) }
        #expect(throws: DecodingError.self) { try LineCodec.readIncoming(Array(#"{"id":1,"result":}"#.utf8)) }
    }

    @Test func anEventIsDecodedOnceAndAnUnknownOneIsStillAnEvent() throws {
        let known = try LineCodec.readIncoming(
            Array(#"{"data":{"user_id":"u"},"event":"user_removed","generation":2}"#.utf8)
        )
        #expect(known.kind == .event)
        #expect(try known.decodeEvent() == Event(generation: 2, .userRemoved(userID: "u")))
        // A newer daemon's event: classified as an event (a client skips it), not a broken line.
        let unknown = try LineCodec.readIncoming(Array(#"{"data":{},"event":"no_such_event","generation":1}"#.utf8))
        #expect(unknown.kind == .event)
        #expect(throws: (any Error).self) { try unknown.decodeEvent() }
        #expect(throws: DecodingError.self) { try LineCodec.readIncoming(Array(#"{"event":3}"#.utf8)) }
    }

    // MARK: - As decodeIncoming gives them

    @Test func incomingEventIsAnEventEvenWithAnID() throws {
        // A line with "event" is an event, whatever else it carries.
        let line = #"{"data":{"user_id":"u"},"event":"user_removed","generation":2,"id":5}"#
        guard case .event(let event) = try LineCodec.decodeIncoming(Array(line.utf8)) else {
            Issue.record("not classified as an event")
            return
        }
        #expect(event == Event(generation: 2, .userRemoved(userID: "u")))
    }

    @Test func incomingResultOfNull() throws {
        guard case .response(let id, .success(let value)) = try LineCodec.decodeIncoming(Array(#"{"id":1}"#.utf8))
        else {
            Issue.record("not classified as a response")
            return
        }
        #expect(id == .int(1))
        #expect(value == .null)
    }

    @Test func incomingRejectsUnknownEventsAndGarbage() {
        #expect(throws: (any Error).self) {
            try LineCodec.decodeIncoming(Array(#"{"data":{},"event":"no_such_event","generation":1}"#.utf8))
        }
        #expect(throws: (any Error).self) {
            try LineCodec.decodeIncoming(Array(#"{"data":{},"event":"user_removed","generation":1}"#.utf8))
        }
        #expect(throws: (any Error).self) { try LineCodec.decodeIncoming(Array("not json".utf8)) }
        #expect(throws: (any Error).self) { try LineCodec.decodeIncoming(Array("[]".utf8)) }
        #expect(throws: (any Error).self) { try LineCodec.decodeIncoming([UInt8]()) }
    }
}
