import Foundation
import Testing
import UsherProtocol

/// Golden JSON of the password and confirmation results (issue 21, part 3).
@Suite("Golden JSON: password results")
struct GoldenPasswordResultTests {
    @Test func registerResultOfAnAccountThatWaitsForItsConfirmation() throws {
        try expectResult(
            RegisterRequest.Result(provider: "local", email: "ada@example.com", confirmed: false),
            id: .int(1),
            #"{"id":1,"result":{"confirmed":false,"email":"ada@example.com","provider":"local"}}"# + "\n"
        )
    }

    @Test func resetPasswordResult() throws {
        try expectResult(
            ResetPasswordRequest.Result(
                provider: "local",
                email: "ada@example.com",
                loggedOut: ["u_01"],
                generation: 7
            ),
            id: .int(2),
            #"{"id":2,"result":{"email":"ada@example.com","generation":7,"logged_out":["u_01"],"provider":"local"}}"#
                + "\n"
        )
    }

    @Test func confirmationAndResetRequestResults() throws {
        try expectResult(
            ConfirmUserRequest.Result(provider: "local", email: "ada@example.com"),
            id: .int(3),
            #"{"id":3,"result":{"email":"ada@example.com","provider":"local"}}"# + "\n"
        )
        try expectResult(
            AccountMessageResult(provider: "local"),
            id: .int(4),
            #"{"id":4,"result":{"provider":"local"}}"# + "\n"
        )
    }

    @Test func aPasswordResetLogout() throws {
        try expectEvent(
            Event(generation: 9, .userLoggedOut(userID: "u_01", reason: .passwordReset)),
            #"{"data":{"reason":"password_reset","user_id":"u_01"},"event":"user_logged_out","generation":9}"# + "\n"
        )
    }
}
