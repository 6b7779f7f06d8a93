/// `link_credentials`: authenticates credentials and adds their identity to a logged-in user (default: the seat's
/// active user), whose session then belongs to that identity; the user becomes the seat's active user.
public struct LinkCredentialsRequest: UsherRequest, CustomStringConvertible {
    public static let method = Method.linkCredentials
    /// The user to link to. Default: the active user of `seat`.
    public var userID: String?
    public var seat: String?
    public var provider: String?
    /// As `login` takes them (never `anonymous`). Holds secrets: never logged.
    public var credentials: [String: JSONValue]
    /// Whether a user active on another seat moves to `seat` (else `user_active_elsewhere`).
    public var move = false
    /// Whether a block lease on the seat is broken (needs `manage`; audited as forced).
    public var force = false

    public init(userID: String? = nil, seat: String? = nil, provider: String? = nil, credentials: [String: JSONValue]) {
        self.userID = userID
        self.seat = seat
        self.provider = provider
        self.credentials = credentials
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.optionalString("user_id")
        self.seat = try params.optionalString("seat")
        self.provider = try params.optionalString("provider")
        self.credentials = try params.requiredObject("credentials")
        self.move = try params.optionalBool("move") ?? false
        self.force = try params.optionalBool("force") ?? false
        guard case .string = self.credentials["type"] else {
            throw ResponseError(.invalidParams, "params.credentials.type is required and must be a string")
        }
    }

    /// The credential type (`email_password`, `id_token`, ...).
    public var credentialType: String { self.credentials["type"]?.stringValue ?? "" }

    public var params: Params {
        var params = Params(["credentials": .object(self.credentials)])
        params.set("user_id", self.userID)
        params.set("seat", self.seat)
        params.set("provider", self.provider)
        params.set("move", flag: self.move)
        params.set("force", flag: self.force)
        return params
    }

    /// Never shows the credentials, only their type.
    public var description: String {
        "link_credentials(user_id: \(self.userID ?? "active"), provider: \(self.provider ?? "default"), "
            + "type: \(self.credentialType))"
    }

    public typealias Result = UserResult
}
