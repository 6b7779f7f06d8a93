/// `login_wait`: waits for a login started with `login_begin` (device flow) to finish, and returns the user, who is
/// then logged in and active, as after `login`. Fails with `access_denied` when the person declined, `expired_token`
/// when the code expired first.
public struct LoginWaitRequest: UsherRequest {
    public static let method = Method.loginWait
    public var loginID: String
    /// The seat the user becomes active on. Default: the caller's seat (logind), else the default seat.
    public var seat: String?
    /// Whether a user active on another seat moves here (else `user_active_elsewhere`).
    public var move = false
    /// Whether a block lease on the seat is broken (needs `manage`; audited as forced).
    public var force = false
    /// Links the identity to this logged-in user (as `link_credentials` does) instead of logging in.
    public var linkTo: String?
    /// As `login`'s: the email the account must have, else `identity_mismatch` (counted as a failed login of it).
    public var expectEmail: String?
    /// As `login`'s: false logs the user in without making it active.
    public var activate = true

    public init(loginID: String, seat: String? = nil, linkTo: String? = nil) {
        self.loginID = loginID
        self.seat = seat
        self.linkTo = linkTo
    }

    public init(params: Params) throws(ResponseError) {
        self.loginID = try params.requiredString("login_id")
        self.seat = try params.optionalString("seat")
        self.move = try params.optionalBool("move") ?? false
        self.force = try params.optionalBool("force") ?? false
        self.linkTo = try params.optionalString("link_to")
        self.expectEmail = try params.optionalString("expect_email")
        self.activate = try params.optionalBool("activate") ?? true
    }

    public var params: Params {
        var params = Params(["login_id": .string(self.loginID)])
        params.set("seat", self.seat)
        params.set("move", flag: self.move)
        params.set("force", flag: self.force)
        params.set("link_to", self.linkTo)
        params.set("expect_email", self.expectEmail)
        if !self.activate { params.values["activate"] = .bool(false) }
        return params
    }

    public typealias Result = UserResult
}
