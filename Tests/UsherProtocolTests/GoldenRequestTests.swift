import Foundation
import Testing
import UsherProtocol

/// Golden JSON of the request lines clients write.
@Suite("Golden JSON: requests")
struct GoldenRequestTests {
    @Test func requestLines() {
        #expect(
            text(LineCodec.encode(Request(id: .int(1), method: "hello"))) == #"{"id":1,"method":"hello"}"# + "\n"
        )
        #expect(text(LineCodec.encode(Request(id: nil, method: "status"))) == #"{"method":"status"}"# + "\n")
        #expect(
            text(LineCodec.encode(SwitchUserRequest(userID: "u/1", ifGeneration: 4).request))
                == #"{"method":"switch_user","params":{"if_generation":4,"user_id":"u/1"}}"# + "\n"
        )
        var request = LoginRequest.emailPassword(provider: "local", email: "a@b.c", password: "pw").request
        request.id = .string("x")
        #expect(
            text(LineCodec.encode(request))
                == #"{"id":"x","method":"login","params":{"credentials":{"email":"a@b.c","password":"pw","#
                + #""type":"email_password"},"provider":"local"}}"# + "\n"
        )
    }
}
