import UsherProtocol

/// Providers whose logins need a person at a browser: `login_begin` starts them and, for flows the daemon completes
/// itself (the device flow), `login_wait` collects the result.
package protocol InteractiveLoginProviding: IdentityProvider {
    /// Starts a login of `type` (`authorization_code` or `device_code`).
    ///
    /// - Parameter redirectURI: `authorization_code` only: where the client listens (nil: the configured one).
    /// - Throws: `ProviderError`.
    func beginLogin(type: String, redirectURI: String?) async throws -> LoginBeginRequest.Result

    /// Whether `loginID` names a login this provider started and has not forgotten.
    func hasLogin(_ loginID: String) -> Bool

    /// Waits until the login `loginID` completes and hands its session over, once: a second caller gets
    /// `ProviderError.expiredToken`.
    ///
    /// - Throws: `ProviderError.accessDenied`, `.expiredToken`, `.providerError`, `.unavailable`, or
    ///   `CancellationError` when the waiting task is cancelled (the login itself carries on).
    func finishLogin(_ loginID: String) async throws -> Authentication
}
