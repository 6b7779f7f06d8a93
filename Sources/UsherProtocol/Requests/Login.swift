/// `login`: authenticates with a provider; the user is added if new, becomes logged in and becomes the active user.
public struct LoginRequest: UsherRequest, CustomStringConvertible {
    public static let method = Method.login
    public var provider: String?
    /// `{"type": "email_password", "email", "password"}`, `{"type": "anonymous"}`, `{"type": "api_key", "key"}`, or a
    /// type another provider defines. Holds secrets: never logged.
    public var credentials: [String: JSONValue]
    /// The seat the user becomes active on. Default: the caller's seat (logind), else the default seat.
    public var seat: String?
    /// Whether a user active on another seat moves here (else `user_active_elsewhere`).
    public var move = false
    /// Whether a block lease on the seat is broken (needs `manage`; audited as forced).
    public var force = false
    /// The email the authenticated account must have (case-insensitive); another account is refused with
    /// `identity_mismatch` before anything is committed (`pam_usher`: the PAM user's account).
    public var expectEmail: String?
    /// Whether the user becomes the seat's active user (default true); false logs it in without changing who is
    /// active (PAM's auth stage: `su bob` in alice's session does not hand the seat to bob).
    public var activate = true

    public init(provider: String? = nil, credentials: [String: JSONValue]) {
        self.provider = provider
        self.credentials = credentials
    }

    public static func emailPassword(provider: String? = nil, email: String, password: String) -> LoginRequest {
        LoginRequest(
            provider: provider,
            credentials: ["type": "email_password", "email": .string(email), "password": .string(password)]
        )
    }

    public static func anonymous(provider: String? = nil) -> LoginRequest {
        LoginRequest(provider: provider, credentials: ["type": "anonymous"])
    }

    public static func apiKey(provider: String? = nil, key: String) -> LoginRequest {
        LoginRequest(provider: provider, credentials: ["type": "api_key", "key": .string(key)])
    }

    public init(params: Params) throws(ResponseError) {
        self.provider = try params.optionalString("provider")
        self.credentials = try params.requiredObject("credentials")
        self.seat = try params.optionalString("seat")
        self.move = try params.optionalBool("move") ?? false
        self.force = try params.optionalBool("force") ?? false
        self.expectEmail = try params.optionalString("expect_email")
        self.activate = try params.optionalBool("activate") ?? true
        guard case .string = self.credentials["type"] else {
            throw ResponseError(.invalidParams, "params.credentials.type is required and must be a string")
        }
    }

    /// The credential type (`email_password`, `anonymous`, ...).
    public var credentialType: String { self.credentials["type"]?.stringValue ?? "" }

    public var params: Params {
        var params = Params(["credentials": .object(self.credentials)])
        params.set("provider", self.provider)
        params.set("seat", self.seat)
        params.set("move", flag: self.move)
        params.set("force", flag: self.force)
        params.set("expect_email", self.expectEmail)
        if !self.activate { params.values["activate"] = .bool(false) }
        return params
    }

    /// Never shows the credentials, only their type.
    public var description: String { "login(provider: \(self.provider ?? "default"), type: \(self.credentialType))" }

    public typealias Result = UserResult
}

/// `{"generation", "seat", "user"}`: the answer of `login` and `switch_user`.
public struct UserResult: Sendable, Hashable, Codable {
    public var generation: Int64
    /// The seat the user is active on after the change (absent when none).
    public var seat: String?
    public var user: UserInfo

    public init(generation: Int64, seat: String? = nil, user: UserInfo) {
        self.generation = generation
        self.seat = seat
        self.user = user
    }
}
