/// A user's session state on the device.
public enum UserState: String, Sendable, Hashable, Codable {
    case loggedIn = "logged_in"
    case loggedOut = "logged_out"
    /// Only in the answer to `logout` of an anonymous user, who is removed instead of logged out.
    case removed
}

/// Where a user's access token stands.
public enum TokenState: String, Sendable, Hashable, Codable {
    /// A valid access token is held and its refresh is scheduled.
    case fresh
    /// A refresh is in flight.
    case refreshing
    /// The last refresh failed transiently; another attempt is scheduled at `retry_at`.
    case retrying
    /// No tokens (the user is logged out).
    case none
}

/// A user as clients see it. Every key is always present; absent values are `null`.
public struct UserInfo: Sendable, Hashable, Codable {
    public var id: String
    public var provider: String
    public var kind: String
    public var email: String?
    public var name: String?
    public var state: UserState
    public var active: Bool
    public var createdAt: Timestamp
    public var lastLoginAt: Timestamp?
    public var lastActiveAt: Timestamp?
    public var accessTokenExpiresAt: Timestamp?
    public var refreshTokenExpiresAt: Timestamp?
    public var tokenState: TokenState
    public var nextRefreshAt: Timestamp?
    public var retryAt: Timestamp?
    public var lastRefreshError: ErrorCode?
    /// The subject of the session's identity (`identities[0]`).
    public var subject: String
    /// The user's identities besides the session's (`identities[1...]`).
    public var otherIdentities: [Identity]

    /// Every identity of the user: the session's first (`provider`, `kind`), then those linked to it.
    public var identities: [Identity] {
        [Identity(provider: self.provider, kind: self.kind, subject: self.subject)] + self.otherIdentities
    }
    /// The standard OpenID Connect claims the provider gave (`name`, `given_name`, `picture`, `locale`, ...), or what
    /// `update_profile` set for a local account. Never a secret.
    public var profile: UserClaims
    /// The claims the provider's `custom_claims` setting names, as the provider gave them.
    public var customData: UserClaims

    public init(
        id: String,
        provider: String,
        kind: String,
        email: String?,
        name: String?,
        state: UserState,
        active: Bool,
        createdAt: Timestamp,
        lastLoginAt: Timestamp?,
        lastActiveAt: Timestamp?,
        accessTokenExpiresAt: Timestamp?,
        refreshTokenExpiresAt: Timestamp?,
        tokenState: TokenState,
        nextRefreshAt: Timestamp?,
        retryAt: Timestamp?,
        lastRefreshError: ErrorCode?,
        subject: String = "",
        otherIdentities: [Identity] = [],
        profile: UserClaims = .empty,
        customData: UserClaims = .empty
    ) {
        self.id = id
        self.provider = provider
        self.kind = kind
        self.email = email
        self.name = name
        self.state = state
        self.active = active
        self.createdAt = createdAt
        self.lastLoginAt = lastLoginAt
        self.lastActiveAt = lastActiveAt
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.refreshTokenExpiresAt = refreshTokenExpiresAt
        self.tokenState = tokenState
        self.nextRefreshAt = nextRefreshAt
        self.retryAt = retryAt
        self.lastRefreshError = lastRefreshError
        self.subject = subject
        self.otherIdentities = otherIdentities
        self.profile = profile
        self.customData = customData
    }

    enum CodingKeys: String, CodingKey {
        case id, provider, kind, email, name, state, active
        case createdAt = "created_at"
        case lastLoginAt = "last_login_at"
        case lastActiveAt = "last_active_at"
        case accessTokenExpiresAt = "access_token_expires_at"
        case refreshTokenExpiresAt = "refresh_token_expires_at"
        case tokenState = "token_state"
        case nextRefreshAt = "next_refresh_at"
        case retryAt = "retry_at"
        case lastRefreshError = "last_refresh_error"
        case identities
        case profile
        case customData = "custom_data"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.id = try container.decode(String.self, forKey: .id)
        self.provider = try container.decode(String.self, forKey: .provider)
        self.kind = try container.decode(String.self, forKey: .kind)
        self.email = try container.decodeIfPresent(String.self, forKey: .email)
        self.name = try container.decodeIfPresent(String.self, forKey: .name)
        self.state = try container.decode(UserState.self, forKey: .state)
        self.active = try container.decode(Bool.self, forKey: .active)
        self.createdAt = try container.decode(Timestamp.self, forKey: .createdAt)
        self.lastLoginAt = try container.decodeIfPresent(Timestamp.self, forKey: .lastLoginAt)
        self.lastActiveAt = try container.decodeIfPresent(Timestamp.self, forKey: .lastActiveAt)
        self.accessTokenExpiresAt = try container.decodeIfPresent(Timestamp.self, forKey: .accessTokenExpiresAt)
        self.refreshTokenExpiresAt = try container.decodeIfPresent(Timestamp.self, forKey: .refreshTokenExpiresAt)
        self.tokenState = try container.decode(TokenState.self, forKey: .tokenState)
        self.nextRefreshAt = try container.decodeIfPresent(Timestamp.self, forKey: .nextRefreshAt)
        self.retryAt = try container.decodeIfPresent(Timestamp.self, forKey: .retryAt)
        self.lastRefreshError = try container.decodeIfPresent(ErrorCode.self, forKey: .lastRefreshError)
        // A daemon from before linked identities sends none: the session's is then the only one, its subject unknown.
        let identities = try container.decodeIfPresent([Identity].self, forKey: .identities) ?? []
        self.subject = identities.first?.subject ?? ""
        self.otherIdentities = Array(identities.dropFirst())
        // Absent from a daemon older than profiles: no claims.
        self.profile = try container.decodeIfPresent(UserClaims.self, forKey: .profile) ?? .empty
        self.customData = try container.decodeIfPresent(UserClaims.self, forKey: .customData) ?? .empty
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.id, forKey: .id)
        try container.encode(self.provider, forKey: .provider)
        try container.encode(self.kind, forKey: .kind)
        try container.encode(self.email, forKey: .email)
        try container.encode(self.name, forKey: .name)
        try container.encode(self.state, forKey: .state)
        try container.encode(self.active, forKey: .active)
        try container.encode(self.createdAt, forKey: .createdAt)
        try container.encode(self.lastLoginAt, forKey: .lastLoginAt)
        try container.encode(self.lastActiveAt, forKey: .lastActiveAt)
        try container.encode(self.accessTokenExpiresAt, forKey: .accessTokenExpiresAt)
        try container.encode(self.refreshTokenExpiresAt, forKey: .refreshTokenExpiresAt)
        try container.encode(self.tokenState, forKey: .tokenState)
        try container.encode(self.nextRefreshAt, forKey: .nextRefreshAt)
        try container.encode(self.retryAt, forKey: .retryAt)
        try container.encode(self.lastRefreshError, forKey: .lastRefreshError)
        try container.encode(self.identities, forKey: .identities)
        try container.encode(self.profile, forKey: .profile)
        try container.encode(self.customData, forKey: .customData)
    }
}
