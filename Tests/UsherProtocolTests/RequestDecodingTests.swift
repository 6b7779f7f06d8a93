import Testing
import UsherProtocol

/// `LineCodec.decodeRequest`: the envelope of a request line, and everything a hostile or broken client can send.
@Suite("Request decoding")
struct RequestDecodingTests {
    // MARK: - ids

    @Test(arguments: [
        (#"{"id":1,"method":"hello"}"#, RequestID.int(1)),
        (#"{"id":0,"method":"hello"}"#, .int(0)),
        (#"{"id":-42,"method":"hello"}"#, .int(-42)),
        (#"{"id":9223372036854775807,"method":"hello"}"#, .int(.max)),
        (#"{"id":-9223372036854775808,"method":"hello"}"#, .int(.min)),
        // Any other number is kept as its text, to be echoed exactly.
        (#"{"id":9223372036854775808,"method":"hello"}"#, .number("9223372036854775808")),
        (#"{"id":-9223372036854775809,"method":"hello"}"#, .number("-9223372036854775809")),
        (#"{"id":123456789012345678901234567890,"method":"hello"}"#, .number("123456789012345678901234567890")),
        (#"{"id":99999999999999999999,"method":"hello"}"#, .number("99999999999999999999")),
        (#"{"id":1e30,"method":"hello"}"#, .number("1e30")),
        (#"{"id":1E+2,"method":"hello"}"#, .number("1E+2")),
        (#"{"id":1.5,"method":"hello"}"#, .number("1.5")),
        (#"{"id":1.50,"method":"hello"}"#, .number("1.50")),
        (#"{"id":-0.25,"method":"hello"}"#, .number("-0.25")),
        (#"{"id":-0,"method":"hello"}"#, .number("-0")),
        (#"{"id":"abc","method":"hello"}"#, .string("abc")),
        (#"{"id":"","method":"hello"}"#, .string("")),
        (#"{"id":"42","method":"hello"}"#, .string("42")),
        (#"{"id":"a\"b\\c/d é","method":"hello"}"#, .string("a\"b\\c/d é")),
        (#"{"method":"hello","id":7}"#, .int(7)),
        (#" { "id" : 8 , "method" : "hello" } "#, .int(8)),
    ])
    func ids(line: String, id: RequestID) {
        #expect(decodeRequestResult(line).success == Request(id: id, method: "hello"))
    }

    @Test(arguments: [#"{"method":"hello"}"#, #"{"id":null,"method":"hello"}"#])
    func absentOrNullID(line: String) {
        #expect(decodeRequestResult(line).success == Request(id: nil, method: "hello"))
    }

    @Test(arguments: [
        (#"{"id":true,"method":"hello"}"#, "boolean"),
        (#"{"id":[1],"method":"hello"}"#, "array"),
        (#"{"id":{"n":1},"method":"hello"}"#, "object"),
    ])
    func idOfTheWrongType(line: String, typeName: String) {
        let failure = decodeRequestResult(line).failure
        #expect(failure?.id == nil)
        #expect(failure?.error.code == .invalidRequest)
        #expect(failure?.error.message.contains(typeName) == true)
    }

    // MARK: - method

    @Test(arguments: [
        (#"{"id":3}"#, RequestID?.some(.int(3)), "method is required"),
        (#"{"id":"x","params":{}}"#, .string("x"), "method is required"),
        (#"{}"#, nil, "method is required"),
        (#"{"id":4,"method":42}"#, .int(4), "number"),
        (#"{"id":5,"method":null}"#, .int(5), "null"),
        (#"{"id":6,"method":["hello"]}"#, .int(6), "array"),
        (#"{"id":7,"method":{"name":"hello"}}"#, .int(7), "object"),
        (#"{"id":8,"method":true}"#, .int(8), "boolean"),
        (#"{"id":2.5,"method":false}"#, .number("2.5"), "boolean"),
    ])
    func missingOrMistypedMethodKeepsTheID(line: String, id: RequestID?, message: String) {
        let failure = decodeRequestResult(line).failure
        #expect(failure?.id == id)
        #expect(failure?.error.code == .invalidRequest)
        #expect(failure?.error.message.contains(message) == true)
    }

    @Test func unknownMethodNamesAreLeftToTheDispatcher() {
        // The codec only reads the envelope: an unknown method is answered as `unknown_method` by whoever
        // dispatches, with the id.
        #expect(
            decodeRequestResult(#"{"id":1,"method":"frobnicate"}"#).success
                == Request(id: .int(1), method: "frobnicate")
        )
        #expect(decodeRequestResult(#"{"id":1,"method":""}"#).success == Request(id: .int(1), method: ""))
    }

    // MARK: - params

    @Test(arguments: [
        #"{"id":1,"method":"status"}"#,
        #"{"id":1,"method":"status","params":null}"#,
        #"{"id":1,"method":"status","params":{}}"#,
    ])
    func absentNullOrEmptyParams(line: String) {
        #expect(decodeRequestResult(line).success == Request(id: .int(1), method: "status", params: Params()))
    }

    @Test func objectParams() {
        let line =
            #"{"id":1,"method":"login","params":{"provider":"local","credentials":{"type":"anonymous"},"#
            + #""n":-3,"big":18446744073709551616,"f":0.5,"b":false,"z":null,"list":[1,"two",[3]]}}"#
        let expected = Params([
            "provider": "local",
            "credentials": ["type": "anonymous"],
            "n": -3,
            "big": .double(18_446_744_073_709_551_616),
            "f": .double(0.5),
            "b": false,
            "z": nil,
            "list": [1, "two", [3]],
        ])
        #expect(decodeRequestResult(line).success == Request(id: .int(1), method: "login", params: expected))
    }

    @Test(arguments: [
        (#"{"id":1,"method":"status","params":[]}"#, RequestID?.some(.int(1)), "array"),
        (#"{"id":"p","method":"status","params":[{"a":1}]}"#, .string("p"), "array"),
        (#"{"method":"status","params":"x"}"#, nil, "string"),
        (#"{"id":2,"method":"status","params":3}"#, .int(2), "number"),
        (#"{"id":3,"method":"status","params":true}"#, .int(3), "boolean"),
    ])
    func paramsThatAreNotAnObject(line: String, id: RequestID?, typeName: String) {
        let failure = decodeRequestResult(line).failure
        #expect(failure?.id == id)
        #expect(failure?.error.code == .invalidParams)
        #expect(failure?.error.message.contains(typeName) == true)
    }

    @Test func unknownFieldsAreIgnored() {
        let line =
            #"{"jsonrpc":"2.0","id":1,"method":"hello","extra":{"deep":[1,2,{"x":null}]},"params":{"unused":true},"#
            + #""ID":2,"Method":"nope"}"#
        #expect(
            decodeRequestResult(line).success == Request(id: .int(1), method: "hello", params: Params(["unused": true]))
        )
    }

    @Test(arguments: [
        #"{"id":1,"id":2,"method":"hello"}"#,
        #"{"id":1,"method":"hello","method":"status"}"#,
        #"{"id":1,"method":"hello","params":{"a":1},"params":[]}"#,
        #"{"id":1,"method":"hello","method":3}"#,
    ])
    func duplicateKeysDoNotCrash(line: String) {
        // JSON leaves duplicate keys undefined: either value may win, or the line may be refused. What matters is a
        // clean answer.
        switch decodeRequestResult(line) {
        case .success(let request):
            #expect(request.id == .int(1) || request.id == .int(2))
            #expect(["hello", "status"].contains(request.method))
        case .failure(let failure):
            #expect([ErrorCode.invalidRequest, .invalidParams].contains(failure.error.code))
        }
    }

    // MARK: - lines that are not request objects

    @Test(arguments: [
        ("[]", "array"),
        (#"[{"id":1,"method":"hello"}]"#, "array"),
        (#""hello""#, "string"),
        ("42", "number"),
        ("-1.5", "number"),
        ("null", "null"),
        ("true", "boolean"),
    ])
    func nonObjectLines(line: String, typeName: String) {
        let failure = decodeRequestResult(line).failure
        #expect(failure?.id == nil)
        #expect(failure?.error.code == .invalidRequest)
        #expect(failure?.error.message.contains(typeName) == true)
    }

    @Test(arguments: [
        "",
        " ",
        "hello",
        "{",
        "}",
        #"{"id":1,"method":"hello""#,
        #"{"id":1,"method":"hello"}}"#,
        #"{"id":1,"method":"hello"} {"id":2,"method":"hello"}"#,
        #"{"id":1,"method":"hello"} x"#,
        #"{id:1,method:"hello"}"#,
        #"{'id':1,'method':'hello'}"#,
        #"{"id":01,"method":"hello"}"#,
        #"{"id":NaN,"method":"hello"}"#,
        #"{"id":1,"method":"hel"#,
        #"{"id":1,"method":"\x"}"#,
        #"{"id":1,"method":"\ud800"}"#,
        #"{"id":1e999,"method":"hello"}"#,
        "]]]]",
        "}}}}{{{{",
    ])
    func invalidJSON(line: String) {
        let failure = decodeRequestResult(line).failure
        #expect(failure?.id == nil)
        #expect(failure?.error.code == .invalidRequest)
    }

    // MARK: - bytes

    @Test(
        arguments: [
            [0xFF],
            [0xFE],
            [0x80],
            [0xBF],
            [0xC0, 0x80],
            [0xC1, 0xBF],
            [0xC3],
            [0xE2, 0x82],
            [0xE2, 0x28, 0xA1],
            [0xF0, 0x9F, 0x98],
            [0xF5, 0x80, 0x80, 0x80],
            [0xE0, 0x80, 0x80],
            [0xED, 0xA0, 0x80],
            [0xF4, 0x90, 0x80, 0x80],
        ] as [[UInt8]]
    )
    func invalidUTF8InAString(sequence: [UInt8]) {
        let line = Array(#"{"id":1,"method":"hello","params":{"s":""#.utf8) + sequence + Array(#""}}"#.utf8)
        let failure = decodeRequestResult(line).failure
        #expect(failure?.id == nil)
        #expect(failure?.error.code == .invalidRequest)
    }

    @Test func invalidUTF8OutsideStringsAndAtTheEnd() {
        for line in [
            [0xFF] + Array(#"{"id":1,"method":"hello"}"#.utf8),
            Array(#"{"id":1,"method":"hello"}"#.utf8) + [0xC3],
            Array(#"{"id":1,"method":"hello"}"#.utf8) + [0xE2, 0x82],
            Array(#"{"id":1,"method":"hello"}"#.utf8) + [0x80],
        ] {
            let failure = decodeRequestResult(line).failure
            #expect(failure?.error.code == .invalidRequest)
            #expect(failure?.error.message.contains("UTF-8") == true)
        }
    }

    @Test func validMultibyteUTF8() {
        let line = #"{"id":"é€😀","method":"hello","params":{"name":"Zoë 🐙 日本","ключ":"значение"}}"#
        #expect(
            decodeRequestResult(line).success
                == Request(
                    id: .string("é€😀"),
                    method: "hello",
                    params: Params(["name": "Zoë 🐙 日本", "ключ": "значение"])
                )
        )
    }

    @Test func multibyteCharactersDoNotHideBrackets() {
        // A continuation byte is never taken for `"` or `[`, and a lead byte resets a pending backslash correctly.
        let prefix = #"{"id":1,"method":"hello","params":{"s":"€","d":"#
        let within = prefix + String(repeating: "[", count: 62) + String(repeating: "]", count: 62) + "}}"
        let beyond = prefix + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "}}"
        #expect(decodeRequestResult(within).success != nil)
        #expect(decodeRequestResult(beyond).failure?.error.message.contains("nested deeper") == true)
    }

    @Test func rawNULBytes() {
        for line in [
            Array(#"{"id":1,"method":"hello","params":{"s":"a"#.utf8) + [0x00] + Array(#""}}"#.utf8),
            Array(#"{"id":1,"method":"hello"}"#.utf8) + [0x00],
            [0x00] + Array(#"{"id":1,"method":"hello"}"#.utf8),
            [0x00],
        ] {
            let failure = decodeRequestResult(line).failure
            #expect(failure?.id == nil)
            #expect(failure?.error.code == .invalidRequest)
            #expect(failure?.error.message.contains("NUL") == true)
        }
    }

    @Test func escapedNULIsAnOrdinaryCharacter() {
        let line = #"{"id":1,"method":"hello","params":{"s":"a\u0000b"}}"#
        #expect(decodeRequestResult(line).success?.params["s"] == .string("a\u{0}b"))
    }

    // MARK: - nesting

    /// A request whose params hold `levels` nested arrays; its total depth is `levels + 2`.
    private static func nestedArrays(_ levels: Int) -> String {
        #"{"id":1,"method":"hello","params":{"a":"# + String(repeating: "[", count: levels)
            + String(repeating: "]", count: levels) + "}}"
    }

    /// A request whose params hold `levels` nested objects; its total depth is `levels + 2`.
    private static func nestedObjects(_ levels: Int) -> String {
        #"{"id":1,"method":"hello","params":{"a":"# + String(repeating: #"{"a":"#, count: levels) + "null"
            + String(repeating: "}", count: levels) + "}}"
    }

    @Test func nestingJustWithinTheDefaultLimit() throws {
        let arrays = try #require(decodeRequestResult(Self.nestedArrays(62)).success)
        var value = try #require(arrays.params["a"])
        var depth = 2
        while case .array(let elements) = value {
            depth += 1
            guard let first = elements.first else { break }
            value = first
        }
        #expect(depth == 64)
        #expect(decodeRequestResult(Self.nestedObjects(62)).success != nil)
    }

    @Test func nestingBeyondTheDefaultLimit() {
        for line in [Self.nestedArrays(63), Self.nestedObjects(63), Self.nestedArrays(100_000)] {
            let failure = decodeRequestResult(line).failure
            #expect(failure?.id == nil)
            #expect(failure?.error.code == .invalidRequest)
            #expect(failure?.error.message.contains("nested deeper than 64") == true)
        }
    }

    @Test func deepNestingIsRefusedBeforeTheLineIsComplete() {
        // An unterminated flood of brackets is refused for its depth, never handed to the recursive decoder.
        let failure = decodeRequestResult(String(repeating: "[", count: 1_000_000)).failure
        #expect(failure?.error.message.contains("nested deeper") == true)
    }

    @Test func customMaximumDepth() {
        #expect(decodeRequestResult(#"{"id":1,"method":"hello"}"#, maximumDepth: 1).success != nil)
        #expect(decodeRequestResult(#"{"id":1,"method":"hello","params":{}}"#, maximumDepth: 1).failure != nil)
        #expect(decodeRequestResult(#"{"id":1,"method":"hello","params":{}}"#, maximumDepth: 2).success != nil)
        #expect(decodeRequestResult(Self.nestedArrays(8), maximumDepth: 10).success != nil)
        #expect(
            decodeRequestResult(Self.nestedArrays(9), maximumDepth: 10).failure?.error.message
                == "the request is nested deeper than 10 levels"
        )
    }

    @Test func siblingsDoNotAddUp() {
        // Depth is nesting, not the number of brackets: many shallow siblings are fine (as many as one array may
        // hold: `maximumMembers`, 512 by default).
        let siblings = Array(repeating: "[[[]]]", count: 512).joined(separator: ",")
        let line = #"{"id":1,"method":"hello","params":{"a":["# + siblings + "]}}"
        #expect(decodeRequestResult(line).success != nil)
    }

    @Test func bracketsInStringsDoNotCount() throws {
        let brackets = String(repeating: "[{", count: 200)
        let line = #"{"id":1,"method":"hello","params":{"s":""# + brackets + #"","t":"]]]}}}"}}"#
        let request = try #require(decodeRequestResult(line).success)
        #expect(request.params["s"] == .string(brackets))
        #expect(request.params["t"] == .string("]]]}}}"))
    }

    @Test func escapedQuotesDoNotEndStrings() throws {
        // `\"` keeps the string open, so the brackets after it are text; `\\` closes the escape, so the `"` after it
        // ends the string.
        let inside = #"\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\""#
        let line = #"{"id":1,"method":"hello","params":{"s":""# + inside + #"","u":"\\\\","v":"\\\""}}"#
        let request = try #require(decodeRequestResult(line).success)
        #expect(request.params["s"]?.stringValue?.hasPrefix("\"[[[[") == true)
        #expect(request.params["u"] == .string(#"\\"#))
        #expect(request.params["v"] == .string(#"\""#))
    }

    @Test func escapedBackslashBeforeAClosingQuote() {
        // After `"\\"` the string is over: brackets that follow do count.
        let line =
            #"{"id":1,"method":"hello","params":{"s":"\\","d":"# + String(repeating: "[", count: 63)
            + String(repeating: "]", count: 63) + "}}"
        #expect(decodeRequestResult(line).failure?.error.message.contains("nested deeper") == true)
    }

    // MARK: - round trip through the client's encoder

    @Test(arguments: [
        Request(id: .int(1), method: "hello"),
        Request(id: nil, method: "status"),
        Request(id: .number("0.5"), method: "list_users"),
        Request(id: .number("123456789012345678901234567890"), method: "status", params: Params(["n": 1])),
        Request(id: .string("é/\"x\""), method: "switch_user", params: Params(["user_id": "u", "if_generation": 3])),
        Request(
            id: .int(.min),
            method: "login",
            params: Params(["credentials": ["type": "api_key", "key": "k/\\"], "provider": nil, "list": [1, [], [:]]])
        ),
    ])
    func encodeThenDecode(request: Request) {
        let line = LineCodec.encode(request)
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false)
        #expect(decodeRequestResult(Array(line.dropLast())).success == request)
    }
}
