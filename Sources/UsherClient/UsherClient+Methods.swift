/// One method per request of protocol v1. Each is `send(_:)` with the request built from its arguments; a parameter
/// left nil is not sent, and the daemon applies its default (usually: the active user).
extension UsherClient {
    /// Who the daemon is and what this connection may do.
    public func hello() async throws -> HelloRequest.Result {
        try await self.send(HelloRequest())
    }

    /// The configured identity providers.
    public func providers() async throws -> ProvidersRequest.Result {
        try await self.send(ProvidersRequest())
    }

    /// Creates an email/password account at a provider that supports registration.
    public func register(
        provider: String? = nil,
        email: String,
        password: String
    ) async throws
        -> RegisterRequest.Result
    {
        try await self.send(RegisterRequest(provider: provider, email: email, password: password))
    }

    /// Logs in; the user becomes the active user. Build the request with `LoginRequest.emailPassword`, `.anonymous`
    /// or `.apiKey`.
    public func login(_ request: LoginRequest) async throws -> UserResult {
        try await self.send(request)
    }

    /// Starts an interactive login at an OpenID Connect provider: a browser login (`authorization_code`, the
    /// default: open `authorizeURL`, take the code from the redirect to `redirectURI` if its state matches, finish
    /// with `login`) or a device login (`device_code`: show `userCode` and `verificationURI`, then `loginWait`).
    public func loginBegin(
        provider: String? = nil,
        type: LoginFlow? = nil,
        redirectURI: String? = nil
    ) async throws -> LoginBeginRequest.Result {
        try await self.send(LoginBeginRequest(provider: provider, type: type, redirectURI: redirectURI))
    }

    /// Waits for a device login started with `loginBegin` to complete; the user is then logged in and active.
    public func loginWait(loginID: String) async throws -> UserResult {
        try await self.send(LoginWaitRequest(loginID: loginID))
    }

    /// The active user, if any.
    public func currentUser() async throws -> CurrentUserRequest.Result {
        try await self.send(CurrentUserRequest())
    }

    /// Every user on the device, oldest first.
    public func listUsers() async throws -> ListUsersRequest.Result {
        try await self.send(ListUsersRequest())
    }

    /// Makes another logged-in user active; with `ifGeneration`, only if nothing changed since that generation.
    public func switchUser(id: String, ifGeneration: Int64? = nil) async throws -> UserResult {
        try await self.send(SwitchUserRequest(userID: id, ifGeneration: ifGeneration))
    }

    /// Logs a user out (by default the active user); an anonymous user is removed instead.
    public func logout(userID: String? = nil) async throws -> LogoutRequest.Result {
        try await self.send(LogoutRequest(userID: userID))
    }

    /// Deletes everything about a user from the device.
    public func removeUser(id: String) async throws -> RemoveUserRequest.Result {
        try await self.send(RemoveUserRequest(userID: id))
    }

    /// A currently valid access token for a user (by default the active user), valid for at least `minValid` seconds.
    ///
    /// With `audience` or `scopes`, a narrowed token: for that audience and no more than those scopes (a program whose
    /// access rule narrows its tokens gets its rule's narrowed token without asking: docs/least-privilege.md).
    public func accessToken(
        userID: String? = nil,
        minValid: Int64? = nil,
        audience: String? = nil,
        scopes: [String]? = nil
    ) async throws -> AccessTokenRequest.Result {
        try await self.send(
            AccessTokenRequest(
                userID: userID,
                minValid: minValid,
                narrowing: TokenAudience(audience: audience, scopes: scopes)
            )
        )
    }

    /// A DPoP proof (RFC 9449) for one HTTP request with the user's DPoP-bound access token (by default the active
    /// user's), signed by the daemon with the session's key; `nonce` is the `DPoP-Nonce` the server asked for.
    public func dpopProof(
        method: String,
        url: String,
        nonce: String? = nil,
        userID: String? = nil,
        audience: String? = nil,
        scopes: [String]? = nil
    ) async throws -> DPoPProofRequest.Result {
        try await self.send(
            DPoPProofRequest(htm: method, htu: url, nonce: nonce, userID: userID, audience: audience, scopes: scopes)
        )
    }

    /// Refreshes a user's access token now (by default the active user's).
    public func refresh(userID: String? = nil) async throws -> RefreshRequest.Result {
        try await self.send(RefreshRequest(userID: userID))
    }

    /// Refreshes a user's tokens and reads its profile and custom data at the provider again (the SDK's
    /// `refreshCustomData()`; by default the active user's). Subscribers get `user_changed` when anything changed.
    public func refreshProfile(userID: String? = nil, seat: String? = nil) async throws -> UserResult {
        try await self.send(RefreshProfileRequest(userID: userID, seat: seat))
    }

    /// Sets the name, picture or locale of a local email/password account's profile (by default the active user's):
    /// `.some(nil)` removes one, nil leaves it as it is.
    public func updateProfile(
        userID: String? = nil,
        seat: String? = nil,
        name: String?? = nil,
        picture: String?? = nil,
        locale: String?? = nil
    ) async throws -> UserResult {
        var changes: [String: JSONValue] = [:]
        for (key, value) in [("name", name), ("picture", picture), ("locale", locale)] {
            guard let value else { continue }
            changes[key] = value.map(JSONValue.string) ?? .null
        }
        return try await self.send(UpdateProfileRequest(userID: userID, seat: seat, changes: changes))
    }

    /// Creates a named API key; the result holds the key, which is never shown again.
    public func createAPIKey(name: String, userID: String? = nil) async throws -> CreateAPIKeyRequest.Result {
        try await self.send(CreateAPIKeyRequest(name: name, userID: userID))
    }

    /// The names of a user's API keys.
    public func listAPIKeys(userID: String? = nil) async throws -> ListAPIKeysRequest.Result {
        try await self.send(ListAPIKeysRequest(userID: userID))
    }

    /// Deletes a user's API key by name.
    public func deleteAPIKey(name: String, userID: String? = nil) async throws -> DeleteAPIKeyRequest.Result {
        try await self.send(DeleteAPIKeyRequest(name: name, userID: userID))
    }

    /// The public keys that verify access tokens issued by the daemon's local providers.
    public func jwks() async throws -> JWKSRequest.Result {
        try await self.send(JWKSRequest())
    }

    /// Starts the delivery of events (all, or the named ones) to `events`.
    public func subscribe(events: [EventName]? = nil) async throws -> SubscribeRequest.Result {
        try await self.send(SubscribeRequest(events: events))
    }

    /// The daemon's health and counters.
    public func status() async throws -> StatusRequest.Result {
        try await self.send(StatusRequest())
    }
}
