import Logging
import Testing
import UsherCore
import UsherProtocol

@testable import UsherServer

@Suite("Varlink replies")
struct VarlinkReplyTests {
    private func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    @Test func aResultBecomesTheReplysParametersUnchanged() {
        let reply = Reply.result(id: nil, json: Array(#"{"generation":3,"user":null}"#.utf8))
        #expect(self.text(VarlinkReply.from(reply)) == #"{"parameters":{"generation":3,"user":null}}"# + "\0")
        #expect(
            self.text(VarlinkReply.from(reply, continues: true))
                == #"{"continues":true,"parameters":{"generation":3,"user":null}}"# + "\0"
        )
        // The id is the newline-delimited socket's: a Varlink reply has none.
        let withID = Reply.result(id: .int(7), json: Array(#"{"a":1}"#.utf8))
        #expect(self.text(VarlinkReply.from(withID)) == #"{"parameters":{"a":1}}"# + "\0")
        #expect(self.text(withID.line) == #"{"id":7,"result":{"a":1}}"# + "\n")
    }

    @Test func anErrorBecomesTheQualifiedErrorWithItsData() {
        let notFound = Reply.failure(id: nil, ResponseError(.userNotFound, "no user \"x\""))
        #expect(
            self.text(VarlinkReply.from(notFound))
                == #"{"error":"io.usher.Session.UserNotFound","parameters":{"message":"no user \"x\""}}"# + "\0"
        )
        let limited = Reply.failure(id: nil, .rateLimited("too many", retryAfter: 30))
        #expect(
            self.text(VarlinkReply.from(limited))
                == #"{"error":"io.usher.Session.RateLimited","parameters":{"message":"too many","retry_after":30}}"#
                + "\0"
        )
    }

    /// `org.varlink.service.InvalidParameter` names the parameter `ParamsDecoder` found at fault, not one read out of
    /// the message.
    @Test func invalidParamsNamesTheParameterTheDecoderFound() throws {
        func parameter(_ params: Params) -> String {
            do {
                _ = try SwitchUserRequest(params: params)
                return "(decoded)"
            } catch {
                return self.text(VarlinkReply.from(.failure(id: nil, error)))
            }
        }
        let expected = { (name: String) in
            #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":""# + name + #""}}"# + "\0"
        }
        #expect(parameter(Params([:])) == expected("user_id"))
        #expect(parameter(Params(["user_id": "u", "if_generation": -1])) == expected("if_generation"))
        #expect(parameter(Params(["user_id": "u", "move": "yes"])) == expected("move"))
        // An error without a parameter (none of the decoder's) names the whole parameters object.
        let bare = Reply.failure(id: nil, ResponseError(.invalidParams, "something about the parameters"))
        #expect(self.text(VarlinkReply.from(bare)) == expected("parameters"))
        // A provider names the parameter its refusal is about, whatever its message says.
        let provider = ResponseError(
            mapping: ProviderError.invalidParams(parameter: "credentials", "jwt credentials need a string token"),
            logger: Logger(label: "test")
        )
        #expect(provider.code == .invalidParams && provider.message == "jwt credentials need a string token")
        #expect(self.text(VarlinkReply.from(.failure(id: nil, provider))) == expected("credentials"))
    }

    @Test func aLongAnswerWrittenInPiecesIsOneReply() {
        let user = UserInfo(
            id: "u_1",
            provider: "guest",
            kind: "anonymous",
            email: nil,
            name: nil,
            state: .loggedIn,
            active: true,
            createdAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_000),
            lastLoginAt: nil,
            lastActiveAt: nil,
            accessTokenExpiresAt: nil,
            refreshTokenExpiresAt: nil,
            tokenState: .none,
            nextRefreshAt: nil,
            retryAt: nil,
            lastRefreshError: nil
        )
        let result = ListUsersRequest.Result(generation: 2, users: Array(repeating: user, count: 5))
        var chunks = ListLineChunks(id: nil, result: result, usersPerChunk: 2)
        chunks.framing = .varlink
        var reply: [UInt8] = []
        var pieces = 0
        while let piece = chunks.next() {
            reply += piece
            pieces += 1
        }
        #expect(pieces == 3)
        #expect(reply.last == 0 && reply.filter { $0 == 0 }.count == 1)
        var expected = Array(#"{"parameters":"#.utf8)
        var writer = WireWriter()
        result.write(to: &writer)
        expected += writer.bytes + [UInt8(ascii: "}"), 0]
        #expect(self.text(reply) == self.text(expected))
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
        #expect(Method.currentUser.varlinkName == "CurrentUser")
        #expect(Method.createAPIKey.varlinkName == "CreateApiKey")
        #expect(SessionInterface.methods.count == Method.allCases.count)
        for method in Method.allCases {
            #expect(SessionInterface.methods[method.varlinkName] == method)
            #expect(SessionInterface.description.contains("method \(method.varlinkName)("))
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
