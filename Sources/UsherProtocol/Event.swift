/// The names of the events a subscriber can receive.
public enum EventName: String, Sendable, Hashable, Codable, CaseIterable {
    case userLoggedIn = "user_logged_in"
    case activeUserChanged = "active_user_changed"
    case userLoggedOut = "user_logged_out"
    case userRemoved = "user_removed"
    case tokenRefreshed = "token_refreshed"
    case refreshFailed = "refresh_failed"
    case daemonStopping = "daemon_stopping"
}

/// Why a user became logged out.
public enum LogoutReason: String, Sendable, Hashable, Codable {
    /// A client asked (`logout`).
    case requested
    /// The provider rejected the refresh token (revoked session, disabled account).
    case sessionRevoked = "session_revoked"
    /// The refresh token reached its own expiry.
    case refreshTokenExpired = "refresh_token_expired"
}

/// An event pushed to subscribers: `{"event": "<name>", "generation": <n>, "data": {...}}`.
public struct Event: Sendable, Hashable, Codable {
    public var generation: Int64
    public var payload: Payload

    public enum Payload: Sendable, Hashable {
        case userLoggedIn(user: UserInfo)
        case activeUserChanged(previousUserID: String?, userID: String?)
        case userLoggedOut(userID: String, reason: LogoutReason)
        case userRemoved(userID: String)
        case tokenRefreshed(userID: String, accessTokenExpiresAt: Timestamp)
        case refreshFailed(userID: String, code: ErrorCode, message: String, retryAt: Timestamp?)
        case daemonStopping
    }

    public init(generation: Int64, _ payload: Payload) {
        self.generation = generation
        self.payload = payload
    }

    public var name: EventName {
        switch self.payload {
        case .userLoggedIn: .userLoggedIn
        case .activeUserChanged: .activeUserChanged
        case .userLoggedOut: .userLoggedOut
        case .userRemoved: .userRemoved
        case .tokenRefreshed: .tokenRefreshed
        case .refreshFailed: .refreshFailed
        case .daemonStopping: .daemonStopping
        }
    }

    private enum CodingKeys: String, CodingKey {
        case event, generation, data
    }

    private enum DataKeys: String, CodingKey {
        case user
        case previousUserID = "previous_user_id"
        case userID = "user_id"
        case reason
        case accessTokenExpiresAt = "access_token_expires_at"
        case code, message
        case retryAt = "retry_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.name, forKey: .event)
        try container.encode(self.generation, forKey: .generation)
        var data = container.nestedContainer(keyedBy: DataKeys.self, forKey: .data)
        switch self.payload {
        case .userLoggedIn(let user):
            try data.encode(user, forKey: .user)
        case .activeUserChanged(let previous, let current):
            try data.encode(previous, forKey: .previousUserID)
            try data.encode(current, forKey: .userID)
        case .userLoggedOut(let userID, let reason):
            try data.encode(userID, forKey: .userID)
            try data.encode(reason, forKey: .reason)
        case .userRemoved(let userID):
            try data.encode(userID, forKey: .userID)
        case .tokenRefreshed(let userID, let expiresAt):
            try data.encode(userID, forKey: .userID)
            try data.encode(expiresAt, forKey: .accessTokenExpiresAt)
        case .refreshFailed(let userID, let code, let message, let retryAt):
            try data.encode(userID, forKey: .userID)
            try data.encode(code, forKey: .code)
            try data.encode(message, forKey: .message)
            try data.encode(retryAt, forKey: .retryAt)
        case .daemonStopping:
            break
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(EventName.self, forKey: .event)
        self.generation = try container.decode(Int64.self, forKey: .generation)
        let data = try container.nestedContainer(keyedBy: DataKeys.self, forKey: .data)
        switch name {
        case .userLoggedIn:
            self.payload = .userLoggedIn(user: try data.decode(UserInfo.self, forKey: .user))
        case .activeUserChanged:
            self.payload = .activeUserChanged(
                previousUserID: try data.decodeIfPresent(String.self, forKey: .previousUserID),
                userID: try data.decodeIfPresent(String.self, forKey: .userID)
            )
        case .userLoggedOut:
            self.payload = .userLoggedOut(
                userID: try data.decode(String.self, forKey: .userID),
                reason: try data.decode(LogoutReason.self, forKey: .reason)
            )
        case .userRemoved:
            self.payload = .userRemoved(userID: try data.decode(String.self, forKey: .userID))
        case .tokenRefreshed:
            self.payload = .tokenRefreshed(
                userID: try data.decode(String.self, forKey: .userID),
                accessTokenExpiresAt: try data.decode(Timestamp.self, forKey: .accessTokenExpiresAt)
            )
        case .refreshFailed:
            self.payload = .refreshFailed(
                userID: try data.decode(String.self, forKey: .userID),
                code: try data.decode(ErrorCode.self, forKey: .code),
                message: try data.decode(String.self, forKey: .message),
                retryAt: try data.decodeIfPresent(Timestamp.self, forKey: .retryAt)
            )
        case .daemonStopping:
            self.payload = .daemonStopping
        }
    }
}
