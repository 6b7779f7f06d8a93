import NIOCore
import Testing
import UsherFraming
import UsherProtocol

@Suite("Varlink calls")
struct VarlinkCallTests {
    @Test func aCallIsReadWithItsFlagsAndItsParametersAsSent() throws {
        let call = try VarlinkCall.decode(
            Array(
                #"{"more":true,"method":"io.usher.Session.SwitchUser","parameters":{"user_id":"u_1","seat":null},"oneway":false}"#
                    .utf8
            )
        )
        #expect(call.interface == "io.usher.Session")
        #expect(call.member == "SwitchUser")
        #expect(call.method == "io.usher.Session.SwitchUser")
        #expect(call.more && !call.oneway && !call.upgrade)
        #expect(call.parametersBytes == Array(#"{"user_id":"u_1","seat":null}"#.utf8))
        let head = call.head(method: .switchUser)
        #expect(head.id == nil && head.method == "switch_user")
        #expect(try ParamsDecoder(head.decodeParams()).string("user_id") == "u_1")
    }

    @Test func flagsDefaultToFalseAndNullParametersToNone() throws {
        let call = try VarlinkCall.decode(Array(#"{"method":"org.varlink.service.GetInfo","parameters":null}"#.utf8))
        #expect(!call.more && !call.oneway && !call.upgrade)
        #expect(call.parametersBytes == nil)
        #expect(try call.decodeParameters() == Params())
    }

    struct Malformed: CustomTestStringConvertible, Sendable {
        var name: String
        var message: String
        var code: ErrorCode
        var testDescription: String { self.name }
    }

    static let malformed: [Malformed] = [
        Malformed(name: "not JSON", message: "nope", code: .invalidRequest),
        Malformed(name: "an array", message: "[]", code: .invalidRequest),
        Malformed(name: "no method", message: #"{"parameters":{}}"#, code: .invalidRequest),
        Malformed(name: "a number as method", message: #"{"method":1}"#, code: .invalidRequest),
        Malformed(name: "a method without interface", message: #"{"method":"Hello"}"#, code: .invalidRequest),
        Malformed(name: "a method ending in a dot", message: #"{"method":"io.usher.Session."}"#, code: .invalidRequest),
        Malformed(name: "more as a string", message: #"{"method":"a.B","more":"true"}"#, code: .invalidRequest),
        Malformed(name: "oneway as a number", message: #"{"method":"a.B","oneway":1}"#, code: .invalidRequest),
        Malformed(name: "parameters as an array", message: #"{"method":"a.B","parameters":[]}"#, code: .invalidParams),
        Malformed(name: "too deep", message: String(repeating: "[", count: 100), code: .invalidRequest),
    ]

    @Test(arguments: Self.malformed)
    func aMalformedCallIsRefusedWithAClearCode(_ malformed: Malformed) {
        #expect(throws: ResponseError.self) { try VarlinkCall.decode(Array(malformed.message.utf8)) }
        do {
            _ = try VarlinkCall.decode(Array(malformed.message.utf8))
        } catch {
            #expect(error.code == malformed.code, "\(error)")
        }
    }

    @Test func messagesAreSplitAtNulAndACarriageReturnIsPartOfTheMessage() {
        var splitter = LineSplitter(maximumLineLength: 32, terminator: 0)
        var buffer = ByteBuffer(bytes: Array(#"{"a":1}"#.utf8) + [0] + Array("x\r".utf8) + [0] + Array("partial".utf8))
        var messages: [String] = []
        while case .line(let line)? = splitter.next(from: &buffer) { messages.append(String(buffer: line)) }
        #expect(messages == [#"{"a":1}"#, "x\r"])
        #expect(buffer.readableBytes == "partial".utf8.count)
        // A message that passes the limit without its NUL is refused as soon as it does.
        var long = ByteBuffer(bytes: Array(repeating: UInt8(ascii: "a"), count: 33))
        var limited = LineSplitter(maximumLineLength: 32, terminator: 0)
        #expect(limited.next(from: &long) == .tooLong)
        // Newlines are ordinary bytes of a Varlink message.
        var withNewline = ByteBuffer(bytes: Array("a\nb".utf8) + [0])
        var nul = LineSplitter(maximumLineLength: 32, terminator: 0)
        #expect(nul.next(from: &withNewline) == .line(ByteBuffer(string: "a\nb")))
    }
}
