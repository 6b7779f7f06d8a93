import Testing
import UsherProtocol

@testable import UsherServer

@Suite("Varlink replies")
struct VarlinkReplyTests {
    private func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    @Test func aResultLineBecomesTheReplysParametersUnchanged() {
        let line = WireWriter.responseLine(id: nil, resultJSON: Array(#"{"generation":3,"user":null}"#.utf8))
        #expect(self.text(VarlinkReply.from(answer: line)) == #"{"parameters":{"generation":3,"user":null}}"# + "\0")
        #expect(
            self.text(VarlinkReply.from(answer: line, continues: true))
                == #"{"continues":true,"parameters":{"generation":3,"user":null}}"# + "\0"
        )
    }

    @Test func anErrorLineBecomesTheQualifiedErrorWithItsData() {
        let notFound = LineCodec.encodeError(id: nil, ResponseError(.userNotFound, "no user \"x\""))
        #expect(
            self.text(VarlinkReply.from(answer: notFound))
                == #"{"error":"io.usher.Session.UserNotFound","parameters":{"message":"no user \"x\""}}"# + "\0"
        )
        let limited = LineCodec.encodeError(id: nil, .rateLimited("too many", retryAfter: 30))
        #expect(
            self.text(VarlinkReply.from(answer: limited))
                == #"{"error":"io.usher.Session.RateLimited","parameters":{"message":"too many","retry_after":30}}"#
                + "\0"
        )
        let invalid = LineCodec.encodeError(
            id: nil,
            ResponseError(.invalidParams, "params.min_valid must be an integer")
        )
        #expect(
            self.text(VarlinkReply.from(answer: invalid))
                == #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"min_valid"}}"# + "\0"
        )
    }

    @Test func theParameterOfAnInvalidParamsMessage() {
        #expect(VarlinkReply.parameter(named: "params.user_id is required") == "user_id")
        #expect(
            VarlinkReply.parameter(named: "params.credentials.type is required and must be a string")
                == "credentials.type"
        )
        #expect(VarlinkReply.parameter(named: "params.after needs params.limit") == "after")
        #expect(
            VarlinkReply.parameter(named: "update_profile needs at least one of name, picture, locale") == "parameters"
        )
    }

    @Test func aLongAnswerWrittenInPiecesIsOneReply() {
        let pieces: [[UInt8]] = [
            Array(#"{"id":null,"result":{"users":[{"#.utf8), Array(#""id":"u_1"}]}}"#.utf8) + [10],
        ]
        let reply = VarlinkReply.chunk(pieces[0], first: true) + VarlinkReply.chunk(pieces[1], first: false)
        #expect(self.text(reply) == #"{"parameters":{"users":[{"id":"u_1"}]}}"# + "\0")
    }

    @Test func anEventIsAReplyThatContinues() {
        let event = LineCodec.encode(Event(generation: 4, .userRemoved(userID: "u_1", reason: .requested)))
        let reply = self.text(VarlinkReply.event(event))
        #expect(reply.hasPrefix(#"{"continues":true,"parameters":{"#))
        #expect(reply.contains(#""event":"user_removed""#) && reply.contains(#""generation":4"#))
        #expect(reply.hasSuffix("}}\0"))
        #expect(self.text(VarlinkReply.event(event, final: true)).hasPrefix(#"{"parameters":{"#))
    }

    @Test func everyMethodAndErrorCodeHasItsVarlinkName() {
        #expect(SessionInterface.member(of: .currentUser) == "CurrentUser")
        #expect(SessionInterface.member(of: .createAPIKey) == "CreateApiKey")
        #expect(SessionInterface.methods.count == Method.allCases.count)
        for method in Method.allCases {
            #expect(SessionInterface.methods[SessionInterface.member(of: method)] == method)
            #expect(SessionInterface.description.contains("method \(SessionInterface.member(of: method))("))
        }
        for code in ErrorCode.all where code != .invalidParams && code != .unknownMethod {
            let name = SessionInterface.errorName(code)
            #expect(
                SessionInterface.description.contains("error \(name.dropFirst("io.usher.Session.".count)) ("),
                "\(name)"
            )
        }
    }
}
