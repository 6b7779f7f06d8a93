/// `login_begin`: starts an interactive login at a provider (OpenID Connect), for flows that need a person at a
/// browser.
///
/// - `authorization_code` (the default): the daemon creates `state`, a nonce and a PKCE verifier and returns the URL
///   to open. The client listens on `redirect_uri`, checks that the redirect carries the same `state`, and finishes
///   with `login` and credentials `{"type": "authorization_code", "code", "code_verifier", "redirect_uri", "state"}`.
/// - `device_code`: the daemon starts the device authorization grant (RFC 8628) and polls the provider itself; the
///   client shows `user_code` and `verification_uri` and waits with `login_wait {login_id}`.
public struct LoginBeginRequest: UsherRequest {
    public static let method = Method.loginBegin
    public static let authorizationCode = "authorization_code"
    public static let deviceCode = "device_code"

    public var provider: String?
    /// `authorization_code` (default) or `device_code`.
    public var type: String?
    /// `authorization_code` only: the loopback address the client listens on. It must match the provider's configured
    /// `redirect_uri` in scheme, host and path, and in port unless the configured port is 0. Without it the daemon
    /// uses the configured one, choosing a free port when the configured port is 0.
    public var redirectURI: String?

    public init(provider: String? = nil, type: String? = nil, redirectURI: String? = nil) {
        self.provider = provider
        self.type = type
        self.redirectURI = redirectURI
    }

    public init(params: Params) throws(ResponseError) {
        self.provider = try params.optionalString("provider")
        self.type = try params.optionalString("type")
        if let type = self.type, type != Self.authorizationCode, type != Self.deviceCode {
            throw ResponseError(.invalidParams, "params.type must be \"authorization_code\" or \"device_code\"")
        }
        self.redirectURI = try params.optionalString("redirect_uri")
        if self.redirectURI != nil, self.type == Self.deviceCode {
            throw ResponseError(.invalidParams, "params.redirect_uri goes with type \"authorization_code\" only")
        }
    }

    public var params: Params {
        var params = Params()
        params.set("provider", self.provider)
        params.set("type", self.type)
        params.set("redirect_uri", self.redirectURI)
        return params
    }

    /// The started login. Every key is always present; the keys of the other flow are null.
    public struct Result: Sendable, Hashable, Codable, CustomStringConvertible {
        /// `authorization_code` or `device_code`.
        public var type: String
        /// `pending`: the login is under way.
        public var status: String
        /// The provider's name.
        public var provider: String
        /// `device_code`: the id to pass to `login_wait`.
        public var loginID: String?
        /// `authorization_code`: the URL to open in a browser.
        public var authorizeURL: String?
        /// `authorization_code`: the redirect must carry exactly this value.
        public var state: String?
        /// `authorization_code`: the PKCE verifier to send back with the code.
        public var codeVerifier: String?
        /// `authorization_code`: where the browser is sent back to.
        public var redirectURI: String?
        /// `device_code`: where the person enters `user_code`.
        public var verificationURI: String?
        /// `device_code`: `verification_uri` with the code filled in, when the provider gives one.
        public var verificationURIComplete: String?
        /// `device_code`: the code the person types.
        public var userCode: String?
        /// When the login can no longer complete.
        public var expiresAt: Timestamp

        public init(
            type: String,
            status: String = "pending",
            provider: String,
            loginID: String? = nil,
            authorizeURL: String? = nil,
            state: String? = nil,
            codeVerifier: String? = nil,
            redirectURI: String? = nil,
            verificationURI: String? = nil,
            verificationURIComplete: String? = nil,
            userCode: String? = nil,
            expiresAt: Timestamp
        ) {
            self.type = type
            self.status = status
            self.provider = provider
            self.loginID = loginID
            self.authorizeURL = authorizeURL
            self.state = state
            self.codeVerifier = codeVerifier
            self.redirectURI = redirectURI
            self.verificationURI = verificationURI
            self.verificationURIComplete = verificationURIComplete
            self.userCode = userCode
            self.expiresAt = expiresAt
        }

        private enum CodingKeys: String, CodingKey {
            case type, status, provider, state
            case loginID = "login_id"
            case authorizeURL = "authorize_url"
            case codeVerifier = "code_verifier"
            case redirectURI = "redirect_uri"
            case verificationURI = "verification_uri"
            case verificationURIComplete = "verification_uri_complete"
            case userCode = "user_code"
            case expiresAt = "expires_at"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.type, forKey: .type)
            try container.encode(self.status, forKey: .status)
            try container.encode(self.provider, forKey: .provider)
            try container.encode(self.loginID, forKey: .loginID)
            try container.encode(self.authorizeURL, forKey: .authorizeURL)
            try container.encode(self.state, forKey: .state)
            try container.encode(self.codeVerifier, forKey: .codeVerifier)
            try container.encode(self.redirectURI, forKey: .redirectURI)
            try container.encode(self.verificationURI, forKey: .verificationURI)
            try container.encode(self.verificationURIComplete, forKey: .verificationURIComplete)
            try container.encode(self.userCode, forKey: .userCode)
            try container.encode(self.expiresAt, forKey: .expiresAt)
        }

        /// Never shows the PKCE verifier or the state.
        public var description: String { "login_begin(\(self.type) at \(self.provider), expires \(self.expiresAt))" }
    }
}
