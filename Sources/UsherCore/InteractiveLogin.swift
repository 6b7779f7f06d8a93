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
    func beginLogin(type: LoginFlow, redirectURI: String?, owner: UInt32) async throws -> StartedLogin

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
/// complete it, and when it expires; exactly `login_begin`'s result. Holds the PKCE verifier and state of an
/// authorization code login: never logged (its `description` leaves them out).
package typealias StartedLogin = LoginBeginRequest.Result

extension StartedLogin {
    /// A login under way (`status` is `pending` until `login_wait` or the redirect completes it).
    package init(
        type: LoginFlow,
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
        self.init(
            type: type,
            status: "pending",
            provider: provider,
            loginID: loginID,
            authorizeURL: authorizeURL,
            state: state,
            codeVerifier: codeVerifier,
            redirectURI: redirectURI,
            verificationURI: verificationURI,
            verificationURIComplete: verificationURIComplete,
            userCode: userCode,
            expiresAt: expiresAt
        )
    }
}
