// What `login`, `link_credentials` and `login_wait` add to their generated types (varlink/io.usher.Session.varlink):
// the credential shapes the CLI and the client build, and descriptions that never show a secret.

extension LoginRequest: CustomStringConvertible {
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

    public mutating func validate(_ params: Params) throws(ResponseError) {
        try Self.checkCredentialType(self.credentials)
    }

    /// `credentials.type` is a string: which provider's type of credentials they are.
    static func checkCredentialType(_ credentials: [String: JSONValue]) throws(ResponseError) {
        guard case .string = credentials["type"] else {
            throw ParamsDecoder.invalid("credentials", "params.credentials.type is required and must be a string")
        }
    }

    /// The credential type (`email_password`, `anonymous`, ...).
    public var credentialType: String { self.credentials["type"]?.stringValue ?? "" }

    /// Whether the user becomes the seat's active user (`activate`, default true).
    public var activates: Bool { self.activate ?? true }

    /// Never shows the credentials, only their type.
    public var description: String { "login(provider: \(self.provider ?? "default"), type: \(self.credentialType))" }
}

extension LinkCredentialsRequest: CustomStringConvertible {
    public mutating func validate(_ params: Params) throws(ResponseError) {
        try LoginRequest.checkCredentialType(self.credentials)
    }

    /// The credential type (`email_password`, `id_token`, ...).
    public var credentialType: String { self.credentials["type"]?.stringValue ?? "" }

    /// Never shows the credentials, only their type.
    public var description: String {
        "link_credentials(user_id: \(self.userID ?? "active"), provider: \(self.provider ?? "default"), "
            + "type: \(self.credentialType))"
    }
}

extension LoginWaitRequest {
    /// As `login`'s: whether the user becomes the seat's active user (default true).
    public var activates: Bool { self.activate ?? true }
}

extension LoginBeginRequest {
    public mutating func validate(_ params: Params) throws(ResponseError) {
        if self.redirectURI != nil, self.type == .deviceCode {
            throw ParamsDecoder.invalid(
                "redirect_uri",
                "params.redirect_uri goes with type \"authorization_code\" only"
            )
        }
    }
}

/// `{"generation", "seat", "user"}`: the answer of `login`, `login_wait`, `switch_user`, `link_credentials`,
/// `refresh_profile` and `update_profile`.
public typealias UserResult = LoginRequest.Result

extension UserResult {
    /// In the order the answer's keys are written.
    public init(generation: Int64, seat: String?, user: UserInfo) {
        self.init(generation: generation, user: user, seat: seat)
    }
}
