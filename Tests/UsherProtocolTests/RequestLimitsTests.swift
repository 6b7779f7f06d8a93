import Testing
import UsherProtocol

/// What a request line may cost before anything in it is decoded: members per object or array are counted while the
/// line is scanned, the envelope is read without `params`, and `params` is decoded only on request.
@Suite("Request limits")
struct RequestLimitsTests {
    static func hello(keys: Int, value: (Int) -> String = { _ in "0" }) -> [UInt8] {
        // Keys in base 36 ("k0" to "k5do"), so that 7,000 of them make a line of about 62 KB, as in the issue.
        let members = (0..<keys).map { "\"k\(String($0, radix: 36))\":\(value($0))" }.joined(separator: ",")
        return Array(#"{"id":1,"method":"hello","params":{"#.utf8) + Array(members.utf8) + Array("}}".utf8)
    }

    @Test func aSevenThousandKeyObjectIsRefusedWithAClearError() {
        let line = Self.hello(keys: 7000)
        #expect(line.count > 60_000 && line.count < 65_536)
        let failure = decodeRequestResult(line).failure
        #expect(failure?.error.code == .invalidRequest)
        #expect(failure?.error.message == "an object in the request has more than 512 keys")
    }

    @Test func theScanStopsAtTheMemberThatIsOneTooMany() {
        // Garbage after the 513th key is never looked at: the refusal is for the count, not the garbage.
        let line = Self.hello(keys: 7000) { $0 == 600 ? "tru" : "0" }
        #expect(decodeRequestResult(line).failure?.error.message.contains("more than 512 keys") == true)
        // Garbage before it is found first.
        let early = Self.hello(keys: 7000) { $0 == 100 ? "tru" : "0" }
        #expect(decodeRequestResult(early).failure?.error.message == "the line is not valid JSON")
    }

    @Test func arraysAreBoundedTheSameWay() {
        let elements = Array(repeating: "0", count: 513).joined(separator: ",")
        let line = #"{"id":1,"method":"hello","params":{"a":[\#(elements)]}}"#
        #expect(
            decodeRequestResult(line).failure?.error.message == "an array in the request has more than 512 elements"
        )
        let within = #"{"id":1,"method":"hello","params":{"a":[\#(elements.dropLast(2))]}}"#
        #expect(decodeRequestResult(within).success != nil)
    }

    @Test func theLimitIsExactAndConfigurable() throws {
        #expect(decodeRequestResult(Self.hello(keys: 510)).success?.params.values.count == 510)
        let line = Self.hello(keys: 40)
        #expect(throws: LineCodec.DecodingFailure.self) { try LineCodec.decodeRequest(line, maximumMembers: 39) }
        #expect(try LineCodec.decodeRequest(line, maximumMembers: 40).params.values.count == 40)
        // The envelope counts too: it is an object with members like any other.
        let envelope = Array(#"{"id":1,"method":"hello","a":1,"b":2}"#.utf8)
        #expect(throws: LineCodec.DecodingFailure.self) { try LineCodec.decodeRequest(envelope, maximumMembers: 3) }
    }

    @Test func theHeadIsReadWithoutDecodingParams() throws {
        // A number out of range is valid JSON grammar that the decoder cannot represent: the head is fine, and only
        // decoding the params fails.
        let line = Array(#"{"params":{"user_id":"u_1","x":1e999},"method":"remove_user","id":"r"}"#.utf8)
        let head = try LineCodec.decodeHead(line)
        #expect(head.id == .string("r"))
        #expect(head.method == "remove_user")
        #expect(head.peekParam("user_id") == "u_1")
        #expect(head.peekParam("x") == nil)
        #expect(throws: LineCodec.DecodingFailure.self) { try head.decodeParams() }
        let ok = try LineCodec.decodeHead(Array(#"{"method":"status","params":{"a":[1,{"b":null}]}}"#.utf8))
        #expect(try ok.decodeParams() == Params(["a": [1, ["b": nil]]]))
    }

    @Test func escapedKeysAndMethodsMeanWhatTheySay() throws {
        let head = try LineCodec.decodeHead(Array(#"{"\u0069d":3,"m\u0065thod":"st\u0061tus"}"#.utf8))
        #expect(head.id == .int(3))
        #expect(head.method == "status")
        let emoji = try LineCodec.decodeHead(Array(#"{"id":"\ud83d\ude00","method":"a\/b\n"}"#.utf8))
        #expect(emoji.id == .string("😀"))
        #expect(emoji.method == "a/b\n")
    }

    @Test(arguments: [
        #"{"id":1,"method":"hello","params":{"a":"x"y"}}"#,
        #"{"id":1,"method":"hello","params":{"a":1,}}"#,
        #"{"id":1,"method":"hello","params":{"a" 1}}"#,
        #"{"id":1,"method":"hello","params":{"a":[1 2]}}"#,
        #"{"id":1,"method":"hello","params":{"a":-}}"#,
        #"{"id":1,"method":"hello","params":{"a":1.}}"#,
        #"{"id":1,"method":"hello","params":{"a":1e}}"#,
        #"{"id":1,"method":"hello","params":{"a":nul}}"#,
        #"{"id":1,"method":"hello","params":{"a":"\u12G4"}}"#,
        "{\"id\":1,\"method\":\"hello\",\"params\":{\"a\":\"tab\there\"}}",
    ])
    func grammarErrorsInsideParamsAreFoundBeforeAnythingIsDecoded(line: String) {
        #expect(throws: LineCodec.DecodingFailure.self) { try LineCodec.decodeHead(Array(line.utf8)) }
    }
}
