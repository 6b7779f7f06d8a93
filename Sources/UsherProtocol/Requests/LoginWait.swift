/// `login_wait`: waits for a login started with `login_begin` (device flow) to finish, and returns the user, who is
/// then logged in and active, as after `login`. Fails with `access_denied` when the person declined, `expired_token`
/// when the code expired first.
public struct LoginWaitRequest: UsherRequest {
    public static let method = Method.loginWait
    public var loginID: String

    public init(loginID: String) { self.loginID = loginID }

    public init(params: Params) throws(ResponseError) {
        self.loginID = try params.requiredString("login_id")
    }

    public var params: Params { Params(["login_id": .string(self.loginID)]) }

    public typealias Result = UserResult
}
