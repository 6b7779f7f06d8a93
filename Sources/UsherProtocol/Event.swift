extension EventName {
    /// The events `subscribe` delivers when it names none: every event but those sent only to lease holders (naming
    /// those is allowed, and delivers nothing: they go to the lease's connection, subscribed or not).
    public static let subscribable: [EventName] = allCases.filter { $0 != .switchPending && $0 != .leaseBroken }
}

/// Why a user became logged out.
public enum LogoutReason: String, Sendable, Hashable, Codable {
    /// A client asked (`logout`).
    case requested
    /// The provider rejected the refresh token (revoked session, disabled account).
    case sessionRevoked = "session_revoked"
    /// The refresh token reached its own expiry.
    case refreshTokenExpired = "refresh_token_expired"
    /// The identity the session belonged to was unlinked from the user (`unlink_identity`).
    case identityUnlinked = "identity_unlinked"
    /// The account's password was reset (`reset_password`, `complete_password_reset`): every session of it ends.
    case passwordReset = "password_reset"
    /// `[seats] lock_after_pin_failures` wrong PINs in a row were given to unlock the user's seat.
    case pinFailures = "pin_failures"
}

/// Why a user was removed from the device.
public enum RemovalReason: String, Sendable, Hashable, Codable {
    /// `remove_user`: forgotten on this device; the account lives on.
    case requested
    /// An anonymous user's session ended (anonymous users are removed rather than logged out).
    case loggedOut = "logged_out"
    /// `delete_user`: the account was deleted at its provider.
    case deleted
}

/// An event pushed to subscribers: `{"event": "<name>", "generation": <n>, "data": {...}}`.
public struct Event: Sendable, Hashable, Codable {
    public var generation: Int64
    /// The seat the event concerns (`data.seat`), for the events about one seat: `active_user_changed`, `seat_added`,
    /// `seat_removed`, `switch_pending`, `lease_broken`. Nil for the others.
    public var seat: String?
    public var payload: Payload

    public enum Payload: Sendable, Hashable {
        case userLoggedIn(user: UserInfo)
        case activeUserChanged(previousUserID: String?, userID: String?)
        case userLoggedOut(userID: String, reason: LogoutReason)
        case userRemoved(userID: String, reason: RemovalReason = .requested)
        /// The user as it is now: something other than its state changed (identities, profile, custom data).
        case userChanged(user: UserInfo)
        case tokenRefreshed(userID: String, accessTokenExpiresAt: Timestamp)
        case refreshFailed(userID: String, code: ErrorCode, message: String, retryAt: Timestamp?)
        case daemonStopping
        /// A seat appeared (logind), with where it comes from.
        case seatAdded(source: String)
        case seatRemoved
        /// A change of the seat's active user waits for delay leases until `deadline`.
        case switchPending(previousUserID: String?, userID: String?, deadline: Timestamp)
        /// A lease stopped holding anything back: forced through, or the session it protected ended.
        case leaseBroken(lease: String, reason: String)
        /// `by`: `"usherd"` (`lock_seat`) or `"logind"` (the session it follows was locked).
        case seatLocked(by: String)
        /// `by`: `"pin"` (`unlock`) or `"logind"`.
        case seatUnlocked(by: String)
    }

    public init(generation: Int64, _ payload: Payload) {
        self.generation = generation
        self.payload = payload
    }

    public init(generation: Int64, seat: String?, _ payload: Payload) {
        self.generation = generation
        self.seat = seat
        self.payload = payload
    }

    public var name: EventName {
        switch self.payload {
        case .userLoggedIn: .userLoggedIn
        case .activeUserChanged: .activeUserChanged
        case .userLoggedOut: .userLoggedOut
        case .userRemoved: .userRemoved
        case .userChanged: .userChanged
        case .tokenRefreshed: .tokenRefreshed
        case .refreshFailed: .refreshFailed
        case .daemonStopping: .daemonStopping
        case .seatAdded: .seatAdded
        case .seatRemoved: .seatRemoved
        case .switchPending: .switchPending
        case .leaseBroken: .leaseBroken
        case .seatLocked: .seatLocked
        case .seatUnlocked: .seatUnlocked
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
        case seat, source, deadline, lease, by
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.name, forKey: .event)
        try container.encode(self.generation, forKey: .generation)
        var data = container.nestedContainer(keyedBy: DataKeys.self, forKey: .data)
        switch self.payload {
        case .userLoggedIn(let user), .userChanged(let user):
            try data.encode(user, forKey: .user)
        case .activeUserChanged(let previous, let current):
            try data.encode(previous, forKey: .previousUserID)
            try data.encode(current, forKey: .userID)
        case .userLoggedOut(let userID, let reason):
            try data.encode(userID, forKey: .userID)
            try data.encode(reason, forKey: .reason)
        case .userRemoved(let userID, let reason):
            try data.encode(userID, forKey: .userID)
            try data.encode(reason, forKey: .reason)
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
        case .seatAdded(let source):
            try data.encode(source, forKey: .source)
        case .seatRemoved:
            break
        case .switchPending(let previous, let current, let deadline):
            try data.encode(previous, forKey: .previousUserID)
            try data.encode(current, forKey: .userID)
            try data.encode(deadline, forKey: .deadline)
        case .leaseBroken(let lease, let reason):
            try data.encode(lease, forKey: .lease)
            try data.encode(reason, forKey: .reason)
        case .seatLocked(let by), .seatUnlocked(let by):
            try data.encode(by, forKey: .by)
        }
        try data.encodeIfPresent(self.seat, forKey: .seat)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(EventName.self, forKey: .event)
        self.generation = try container.decode(Int64.self, forKey: .generation)
        let data = try container.nestedContainer(keyedBy: DataKeys.self, forKey: .data)
        self.seat = try data.decodeIfPresent(String.self, forKey: .seat)
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
            self.payload = .userRemoved(
                userID: try data.decode(String.self, forKey: .userID),
                // A daemon from before removal reasons sends none.
                reason: try data.decodeIfPresent(RemovalReason.self, forKey: .reason) ?? .requested
            )
        case .userChanged:
            self.payload = .userChanged(user: try data.decode(UserInfo.self, forKey: .user))
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
        case .seatAdded:
            self.payload = .seatAdded(source: try data.decode(String.self, forKey: .source))
        case .seatRemoved:
            self.payload = .seatRemoved
        case .switchPending:
            self.payload = .switchPending(
                previousUserID: try data.decodeIfPresent(String.self, forKey: .previousUserID),
                userID: try data.decodeIfPresent(String.self, forKey: .userID),
                deadline: try data.decode(Timestamp.self, forKey: .deadline)
            )
        case .leaseBroken:
            self.payload = .leaseBroken(
                lease: try data.decode(String.self, forKey: .lease),
                reason: try data.decode(String.self, forKey: .reason)
            )
        case .seatLocked:
            self.payload = .seatLocked(by: try data.decode(String.self, forKey: .by))
        case .seatUnlocked:
            self.payload = .seatUnlocked(by: try data.decode(String.self, forKey: .by))
        }
    }
}
