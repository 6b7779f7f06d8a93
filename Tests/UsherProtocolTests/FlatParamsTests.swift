import Foundation
import Testing
import UsherProtocol

/// Simple `params` are read without JSONDecoder; what a request's params decode to must not depend on which way
/// they were read.
@Suite("Flat params")
struct FlatParamsTests {
    static let corpus: [String] = [
        #"{}"#, #"{ }"#, #"{"user_id":"u_0123"}"#, #"{"min_valid":300}"#, #"{"min_valid":-0}"#,
        #"{"limit":5,"after":"a42"}"#, #"{ "limit" : 5 , "after" : "a42" }"#, #"{"a":true,"b":false,"c":null}"#,
        #"{"n":999999999999999999}"#, #"{"n":9223372036854775807}"#, #"{"n":-9223372036854775808}"#,
        #"{"n":1.5}"#, #"{"n":1e3}"#, #"{"n":12E-1}"#, #"{"s":"a\"b"}"#, #"{"s":"\u00e9"}"#, #"{"s":"é 🎉"}"#,
        #"{"a":1,"a":2}"#, #"{"o":{"x":1}}"#, #"{"l":[1,2]}"#, #"{"e\u0041":"k"}"#, #"{"s":"slash/"}"#,
        "{\"s\":\"tab\\there\"}", "{\n\t\"limit\": 7\r\n}",
    ]

    @Test func paramsDecodeAsJSONDecoderDecodesThem() throws {
        for params in Self.corpus {
            let line =
                Array(#"{"id":1,"method":"list_users","params":"#.utf8) + Array(params.utf8) + [UInt8(ascii: "}")]
            let expected = try? JSONDecoder().decode(JSONValue.self, from: Data(params.utf8))
            let decoded = Result { try LineCodec.decodeRequest(line).params }
            switch (expected, decoded) {
            case (.object(let values)?, .success(let params)):
                #expect(params.values == values, "\(params)")
            case (nil, .failure):
                break
            default:
                Issue.record("\(params): JSONDecoder gives \(String(describing: expected)), the request \(decoded)")
            }
        }
    }
}
