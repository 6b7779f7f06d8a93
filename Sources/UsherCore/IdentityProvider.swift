import UsherProtocol

/// The tokens of one session, as a provider issued them.
///
/// The two tokens are held packed (`PackedTokens`): reading `accessToken` or `refreshToken` unpacks a new `String`.
package struct TokenSet: Sendable, Hashable {
    private var packed: PackedTokens
    package var issuedAt: Timestamp
    package var expiresAt: Timestamp
    /// Absent when the provider does not say (the session has no local expiry).
    package var refreshExpiresAt: Timestamp?
    /// The key the tokens are bound to (DPoP, RFC 9449), made when the session opened and kept through its refreshes;
    /// nil for bearer tokens.
    package var dpopKey: DPoPKey?

    package init(
        accessToken: String,
        issuedAt: Timestamp,
        expiresAt: Timestamp,
        refreshToken: String?,
        refreshExpiresAt: Timestamp?,
        dpopKey: DPoPKey? = nil
    ) {
        self.packed = PackedTokens(accessToken: accessToken, refreshToken: refreshToken)
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.refreshExpiresAt = refreshExpiresAt
        self.dpopKey = dpopKey
    }

    /// `token_type` of the access token: `DPoP` when it is bound to the session's key, else `Bearer`.
    package var tokenType: String { self.dpopKey == nil ? "Bearer" : "DPoP" }

    package var accessToken: String {
        get { self.packed.accessToken }
        set { self.packed = PackedTokens(accessToken: newValue, refreshToken: self.packed.refreshToken) }
    }

    /// Absent for providers that issue no refresh token: the session then ends when the access token expires.
    package var refreshToken: String? {
        get { self.packed.refreshToken }
        set { self.packed = PackedTokens(accessToken: self.packed.accessToken, refreshToken: newValue) }
    }

    /// Whether the session has a refresh token (without unpacking it).
    package var hasRefreshToken: Bool { self.packed.hasRefreshToken }

    /// The access token's lifetime in milliseconds (`expires_at − issued_at`).
    package var lifetimeMilliseconds: Int64 {
        self.expiresAt.millisecondsSinceEpoch - self.issuedAt.millisecondsSinceEpoch
    }
}

/// Who a provider says the user is, and the session it opened.
package struct Authentication: Sendable {
    /// Stable for one account at this provider; the user id is derived from (provider, subject).
    package var subject: String
    /// The credential type that authenticated (`email_password`, `anonymous`, `api_key`, ...).
    package var kind: String
    package var email: String?
    package var name: String?
    package var tokens: TokenSet
    /// Opaque provider data kept with the session (for example an OIDC ID token for logout hints).
    package var providerData: String?
    /// The standard claims the provider gave (`UserClaims.profile(from:)`); nil: the provider says nothing, and the
    /// user keeps the profile it has.
    package var profile: UserClaims?
    /// The claims the provider's `custom_claims` names; nil as for `profile`.
    package var customData: UserClaims?

    package init(
        subject: String,
        kind: String,
        email: String?,
        name: String? = nil,
        tokens: TokenSet,
        providerData: String? = nil,
        profile: UserClaims? = nil,
        customData: UserClaims? = nil
    ) {
        self.subject = subject
        self.kind = kind
        self.email = email
        self.name = name
        self.tokens = tokens
        self.providerData = providerData
        self.profile = profile
        self.customData = customData
    }
}

extension Authentication {
    /// The identity this authentication proved at the provider named `provider`.
    package func identity(at provider: String) -> Identity {
        Identity(provider: provider, kind: self.kind, subject: self.subject)
    }

    /// The session this authentication opened, as `userID`'s (to revoke it when it is not kept).
    package func session(userID: String) -> ProviderSession {
        ProviderSession(userID: userID, subject: self.subject, tokens: self.tokens, providerData: self.providerData)
    }
}

extension User {
    /// Makes the session the one `authentication` opened for `identity` (a login or a link): logged in, with its
    /// tokens, its claims where it has them, and the uid of the peer that asked.
    package mutating func take(
        _ authentication: Authentication,
        as identity: Identity,
        at now: Timestamp,
        by uid: UInt32?
    ) {
        self.makeSessionIdentity(identity)
        self.email = authentication.email ?? self.email
        self.name = authentication.name ?? self.name
        self.profile = authentication.profile ?? self.profile
        self.customData = authentication.customData ?? self.customData
        self.state = .loggedIn
        self.tokens = authentication.tokens
        self.providerData = authentication.providerData
        self.lastLoginAt = now
        self.sessionUID = uid
    }
}

/// The session a provider is asked to refresh or revoke.
package struct ProviderSession: Sendable {
    package var userID: String
    package var subject: String
    package var tokens: TokenSet
    package var providerData: String?

    package init(userID: String, subject: String, tokens: TokenSet, providerData: String?) {
        self.userID = userID
        self.subject = subject
        self.tokens = tokens
        self.providerData = providerData
    }
}

/// The result of a refresh: new tokens, provider data when it changed, and the provider's own bookkeeping, if any,
/// to be written together with them.
package struct RefreshedSession: Sendable {
    package var tokens: TokenSet
    package var providerData: String?
    /// What the provider must record for these tokens to work (the local provider: consume the old refresh grant,
    /// store the new one). The registry commits it in the same transaction as the tokens, so that a crash leaves
    /// either the old tokens with the old grant or the new tokens with the new grant, never a consumed grant with
    /// nothing to replace it.
    package var pendingWrite: (any PendingWrite)?

    package init(tokens: TokenSet, providerData: String?, pendingWrite: (any PendingWrite)? = nil) {
        self.tokens = tokens
        self.providerData = providerData
        self.pendingWrite = pendingWrite
    }
}

/// A write a provider defers to the registry's next commit of the session it belongs to (see
/// `RefreshedSession.pendingWrite`).
///
/// UsherCore knows nothing of how it is written: the `SessionStore` that receives it in a `SessionChange` performs it
/// inside that change's transaction, and fails the whole transaction when it cannot. A store that refuses the write
/// because the provider's grant is gone throws `ProviderError.sessionRevoked`; the registry then ends the session.
package protocol PendingWrite: Sendable {}

/// Errors providers throw. The server maps them to wire errors in one place.
package enum ProviderError: Error, Sendable, Equatable {
    /// The credentials are wrong, expired or revoked. The message is safe to show (no secrets).
    case invalidCredentials(String)
    /// The provider does not accept this credential type (or it is turned off).
    case unsupportedCredentials(String)
    /// The request's parameters are malformed (missing field, wrong type, bad email): `parameter` names the one at
    /// fault (`email`, `credentials`), as Varlink's `InvalidParameter` reports it.
    case invalidParams(parameter: String, String)
    /// Registration: the account exists.
    case accountExists
    /// Registration is turned off.
    case registrationDisabled
    /// A transient failure (network, timeout, 5xx, 429): retry later.
    case unavailable(String)
    /// The provider rejected the session for good (revoked, invalid grant, account disabled).
    case sessionRevoked(String)
    /// The provider answered with an OAuth error (`error`, `error_description`) or with something that is not a valid
    /// answer (malformed JSON, an ID token that does not verify). Safe to show: never holds a secret.
    case providerError(error: String, description: String?)
    /// The person declined the login at the provider.
    case accessDenied(String)
    /// A started login (device flow) expired before it completed, or is unknown.
    case expiredToken(String)
    /// The provider refuses the daemon's own configuration (`invalid_client`: a wrong or rotated client secret). It is
    /// no fault of the session, and retrying soon cannot help: the registry keeps the user logged in and waits long
    /// (or for a configuration reload) before it tries again.
    case misconfigured(String)
    /// The provider refused a refresh with an HTTP 4xx that says nothing more precise (not `invalid_grant`, not a
    /// refused client): not an outage. `refusal` identifies the answer (status and OAuth error), so that the same
    /// refusal twice in a row can end the session (an account deleted at the provider, say), while one refusal is
    /// retried in case it was a passing fault.
    case rejected(refusal: String, message: String)
    /// The password is right but the account waits for its confirmation (`confirm_user`).
    case accountUnconfirmed
    /// A confirmation or reset token that is unknown, used, replaced or expired. The message names no account.
    case invalidToken(String)
}

/// An identity provider: something that turns credentials into a session and keeps that session alive.
///
/// A provider type is one file that conforms to this protocol; the daemon builds providers from configuration
/// sections `[providers.NAME]`.
package protocol IdentityProvider: Sendable {
    /// The configured name (`[providers.NAME]`).
    var name: String { get }
    /// The provider type (`local`, `oidc`).
    var type: String { get }
    /// The credential types `login` accepts, in the order `providers` lists them.
    var credentialTypes: [String] { get }

    /// Authenticates and opens a session.
    ///
    /// - Throws: `ProviderError`.
    func authenticate(credentials: [String: JSONValue]) async throws -> Authentication

    /// Exchanges the session's refresh token for new tokens.
    ///
    /// A provider that must record something for the new tokens to work (a rotated grant) does not write it here: it
    /// checks read-only that the refresh is allowed and returns the write as `RefreshedSession.pendingWrite`, which
    /// the registry commits together with the new tokens.
    ///
    /// - Throws: `ProviderError.unavailable` for transient failures, `.sessionRevoked` for permanent ones,
    ///   `.misconfigured` when the provider refuses the daemon's client configuration.
    func refresh(_ session: ProviderSession) async throws -> RefreshedSession

    /// Revokes the session's tokens. Returns whether the provider confirmed it. Never throws: a provider that is
    /// down must never keep a user logged in.
    func revoke(_ session: ProviderSession) async -> Bool
}

/// Providers that keep accounts of their own (the local provider).
package protocol AccountRegistering: IdentityProvider {
    func register(email: String, password: String) async throws -> String
    /// Sets a new password, given the current one; returns the account's email. Sessions stay as they are.
    func changePassword(email: String, oldPassword: String, newPassword: String) async throws -> String
}

/// Providers that can delete a user's account (`delete_user`).
package protocol AccountDeleting: IdentityProvider {
    /// Why the account of `identity` cannot be deleted here, or nil when it can. `hasSession`: the user's session
    /// belongs to this identity (a provider that deletes with the session's token needs it).
    func deletionProblem(_ identity: Identity, hasSession: Bool) -> String?

    /// Deletes the account of `identity`. `session` is the user's session when it belongs to this identity.
    ///
    /// Returns what the provider must write for it, committed in the same transaction as the user's removal from the
    /// device (the local provider deletes its account rows there), or nil when the account was deleted at the provider
    /// already (OpenID Connect).
    ///
    /// - Throws: `ProviderError` when the provider refuses or cannot be reached: then nothing was deleted.
    func deleteAccount(_ identity: Identity, session: ProviderSession?) async throws -> (any PendingWrite)?
}

/// Providers that can read a user's claims again (`refresh_profile`): the OpenID Connect provider's userinfo, the
/// local provider's stored profile.
package protocol ProfileReading: IdentityProvider {
    /// The user's current profile and custom data, read with the session's (just refreshed) tokens. Nil members: the
    /// provider has nothing new to say about them.
    func readProfile(_ session: ProviderSession) async throws -> (profile: UserClaims?, customData: UserClaims?)
}

/// Providers whose accounts keep a profile the user edits (`update_profile`): the local provider.
package protocol ProfileEditing: IdentityProvider {
    /// The account's profile with `changes` merged in (a `.null` value removes a claim), and the write that stores it,
    /// which the registry commits in the same transaction as the user's new profile.
    func updateProfile(
        subject: String,
        changes: [String: JSONValue]
    ) async throws -> (profile: UserClaims, write: any PendingWrite)
}

/// Providers whose users can create API keys to log in with.
package protocol APIKeyManaging: IdentityProvider {
    func createAPIKey(subject: String, name: String) async throws -> (key: String, createdAt: Timestamp)
    func listAPIKeys(subject: String) async throws -> [APIKeyInfo]
    /// Returns false when no key of that name exists.
    func deleteAPIKey(subject: String, name: String) async throws -> Bool
}

/// Providers that sign tokens themselves and publish the public keys.
package protocol KeyPublishing: IdentityProvider {
    var publicKeys: [JWK] { get }
}
