import UsherProtocol

/// Providers whose logins need a person at a browser: `login_begin` starts them and, for flows the daemon completes
/// itself (the device flow), `login_wait` collects the result.
package protocol InteractiveLoginProviding: IdentityProvider {
    /// Starts a login of `type` (`authorization_code` or `device_code`) for the peer uid `owner`: the login is its,
    /// and counts against its own quota of logins under way (a uid never evicts another's).
    ///
    /// - Parameters:
    ///   - redirectURI: `authorization_code` only: where the client listens (nil: the configured one).
    ///   - owner: the uid of the peer that began it.
    /// - Throws: `ProviderError`.
    func beginLogin(type: String, redirectURI: String?, owner: UInt32) async throws -> StartedLogin

    /// The uid that began `loginID`, when it names a login this provider started and has not forgotten; else nil.
    func owner(ofLogin loginID: String) -> UInt32?

    /// Waits until the login `loginID` completes and hands its session over, once: a second caller gets
    /// `ProviderError.expiredToken`.
    ///
    /// - Throws: `ProviderError.accessDenied`, `.expiredToken`, `.providerError`, `.unavailable`, or
    ///   `CancellationError` when the waiting task is cancelled (the login itself carries on).
    func finishLogin(_ loginID: String) async throws -> Authentication
}

/// A login a person completes at a browser, as a provider started it: what the person and the client need to
/// complete it, and when it expires. Holds the PKCE verifier and state of an authorization code login: never logged.
package struct StartedLogin: Sendable, Hashable, CustomStringConvertible {
    /// `authorization_code` or `device_code`.
    package var type: String
    /// The provider's name.
    package var provider: String
    /// `device_code`: the id `login_wait` takes.
    package var loginID: String?
    /// `authorization_code`: the URL to open in a browser.
    package var authorizeURL: String?
    /// `authorization_code`: the value the redirect must carry.
    package var state: String?
    /// `authorization_code`: the PKCE verifier sent back with the code.
    package var codeVerifier: String?
    /// `authorization_code`: where the browser is sent back to.
    package var redirectURI: String?
    /// `device_code`: where the person enters `userCode`.
    package var verificationURI: String?
    /// `device_code`: `verificationURI` with the code filled in, when the provider gives one.
    package var verificationURIComplete: String?
    /// `device_code`: the code the person types.
    package var userCode: String?
    package var expiresAt: Timestamp

    package init(
        type: String,
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

    /// Never shows the PKCE verifier or the state.
    package var description: String { "login of type \(self.type) at \(self.provider), expires \(self.expiresAt)" }
}
