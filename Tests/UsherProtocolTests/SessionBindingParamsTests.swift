import Foundation
import Testing
import UsherProtocol

/// The parameters of `open_session`, `close_session` and `user_status`, and `login`'s `expect_email` and `activate`:
/// precise `invalid_params`, and params that read back as the same request.
@Suite("Session binding params")
struct SessionBindingParamsTests {
    @Test func openSessionReadsBackAndRefusesWhatCannotBeAName() throws {
        let request = OpenSessionRequest(user: "ann@example.com", seat: "seat1", logindSession: "c7", service: "login")
        #expect(try OpenSessionRequest(params: request.params).params == request.params)
        for bad: JSONValue in ["", .string(String(repeating: "a", count: 257)), "ann\u{7}", "ann\n"] {
            #expect(throws: ResponseError.self) { try OpenSessionRequest(params: Params(["user": bad])) }
            #expect(throws: ResponseError.self) {
                try OpenSessionRequest(params: Params(["user": "ann", "logind_session": bad]))
            }
        }
        #expect(throws: ResponseError.self) { try OpenSessionRequest(params: Params([:])) }
    }

    @Test func closeSessionTakesTheThreeOnCloseValuesOnly() throws {
        #expect(try CloseSessionRequest(params: Params(["binding": "b_1"])).action == .keep)
        for value in CloseAction.allCases {
            let request = CloseSessionRequest(binding: "b_1", onClose: value)
            #expect(try CloseSessionRequest(params: request.params).onClose == value)
        }
        let error = #expect(throws: ResponseError.self) {
            try CloseSessionRequest(params: Params(["binding": "b_1", "on_close": "forget"]))
        }
        #expect(error?.code == .invalidParams)
    }

    @Test func loginReadsExpectEmailAndActivate() throws {
        var request = LoginRequest.emailPassword(email: "ann@example.com", password: "secret")
        #expect(request.activates && request.expectEmail == nil)
        #expect(request.params["activate"] == nil)
        request.expectEmail = "ann@example.com"
        request.activate = false
        let read = try LoginRequest(params: request.params)
        #expect(read.expectEmail == "ann@example.com" && !read.activates)
        var wait = LoginWaitRequest(loginID: "device.x")
        wait.activate = false
        #expect(try LoginWaitRequest(params: wait.params).activate == false)
        #expect(throws: ResponseError.self) {
            try LoginRequest(params: Params(["credentials": ["type": "anonymous"], "activate": "no"]))
        }
    }

    @Test func userStatusResultEncodesSnakeCase() throws {
        let result = UserStatusRequest.Result(status: "logged_out", userID: "u_1", ended: "session_revoked")
        let text = String(decoding: try JSONEncoder().encode(result), as: UTF8.self)
        #expect(text.contains("\"user_id\":\"u_1\"") && text.contains("\"ended\":\"session_revoked\""))
    }

    @Test func userStatusTakesAnEmailOrAUnixUserNotBoth() throws {
        #expect(try UserStatusRequest(params: Params(["unix_user": "bob"])).unixUser == "bob")
        #expect(
            try UserStatusRequest(params: UserStatusRequest(email: "a@example.com").params).email == "a@example.com"
        )
        #expect(throws: ResponseError.self) { try UserStatusRequest(params: Params([:])) }
        #expect(throws: ResponseError.self) {
            try UserStatusRequest(params: Params(["unix_user": "bob", "email": "a@example.com"]))
        }
    }
}
