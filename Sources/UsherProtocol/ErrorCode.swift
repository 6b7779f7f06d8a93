/// A stable, machine-readable error code. Codes are part of the protocol: they are never renamed, and docs/protocol.md
/// lists every one.
///
/// This is an open set (a struct, not an enum) so that an older client can still decode a code that a newer daemon
/// introduces.
public struct ErrorCode: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { self.rawValue }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.rawValue)
    }

    /// The line is not a JSON object, or the request envelope is malformed.
    public static let invalidRequest = ErrorCode("invalid_request")
    /// `method` names no method of this protocol version.
    public static let unknownMethod = ErrorCode("unknown_method")
    /// A parameter is missing, has the wrong type, or is out of range.
    public static let invalidParams = ErrorCode("invalid_params")
    /// The line exceeded `limits.max_line_bytes`; the connection is closed after this error.
    public static let lineTooLong = ErrorCode("line_too_long")
    /// No provider with that name is configured.
    public static let providerNotFound = ErrorCode("provider_not_found")
    /// The provider does not accept this credential type (or it is disabled).
    public static let unsupportedCredentials = ErrorCode("unsupported_credentials")
    /// The credentials were wrong, revoked or expired.
    public static let invalidCredentials = ErrorCode("invalid_credentials")
    /// Registration: an account with this email exists already.
    public static let accountExists = ErrorCode("account_exists")
    /// Registration is turned off for this provider.
    public static let registrationDisabled = ErrorCode("registration_disabled")
    /// No user with that id (or email) is on the device.
    public static let userNotFound = ErrorCode("user_not_found")
    /// The user is on the device but logged out.
    public static let userLoggedOut = ErrorCode("user_logged_out")
    /// The request needs an active user and there is none.
    public static let noActiveUser = ErrorCode("no_active_user")
    /// `if_generation` did not match the current generation.
    public static let conflict = ErrorCode("conflict")
    /// The peer is not allowed to call this method.
    public static let permissionDenied = ErrorCode("permission_denied")
    /// The named API key does not exist for this user.
    public static let apiKeyNotFound = ErrorCode("api_key_not_found")
    /// The provider could not be reached, or failed transiently; the request may succeed later.
    public static let providerUnavailable = ErrorCode("provider_unavailable")
    /// The provider refused a refresh with an HTTP 4xx that is not an outage (see `last_refresh_error`).
    public static let providerRejected = ErrorCode("provider_rejected")
    /// The daemon serves `limits.max_connections` connections at most; this one is closed.
    public static let tooManyConnections = ErrorCode("too_many_connections")
    /// Something unexpected failed inside the daemon; details are in its log.
    public static let `internal` = ErrorCode("internal")
    /// The identity provider answered with an error (its `error` and `error_description` are in the message), or with
    /// something that is not a valid answer (malformed JSON, an ID token that does not verify).
    public static let providerError = ErrorCode("provider_error")
    /// The person declined the login at the provider (device flow).
    public static let accessDenied = ErrorCode("access_denied")
    /// The login's code expired before the person approved it (device flow), or the started login is unknown.
    public static let expiredToken = ErrorCode("expired_token")
    /// The identity provider refused the daemon's own client configuration (`invalid_client`: a wrong or rotated
    /// client secret). The user stays logged in; the refresh is retried after a long backoff or a configuration reload.
    public static let providerMisconfigured = ErrorCode("provider_misconfigured")
    /// Too many failed logins for this account or from this peer's uid: the attempt was refused before the credentials
    /// were checked. `data.retry_after` says in how many seconds to try again.
    public static let rateLimited = ErrorCode("rate_limited")
    /// The daemon is stopping and takes no new changes (requests it was already answering finish).
    public static let shuttingDown = ErrorCode("shutting_down")
    /// `link_credentials` or `unlink_identity` cannot do this: anonymous credentials cannot be linked to an existing
    /// user, and a user's last identity cannot be unlinked.
    public static let invalidLink = ErrorCode("invalid_link")
    /// The identity belongs to another user already; that user is unchanged.
    public static let identityInUse = ErrorCode("identity_in_use")
    /// The provider cannot do this (`delete_user` where it has no account-deletion endpoint); the message says what
    /// can be done instead.
    public static let notSupported = ErrorCode("not_supported")
    /// The user is active on another seat (`data.seat` names it); send `"move": true` to move them.
    public static let userActiveElsewhere = ErrorCode("user_active_elsewhere")
    /// A block lease holds the seat's active user in place; `data.holders` lists the leases. `"force": true` from a
    /// peer with `manage` breaks them.
    public static let inhibited = ErrorCode("inhibited")
    /// The request names a seat the daemon does not know.
    public static let seatNotFound = ErrorCode("seat_not_found")
    /// `release`: this connection holds no lease with that id.
    public static let leaseNotFound = ErrorCode("lease_not_found")
    /// The peer's uid holds `leases.max_per_uid` leases already.
    public static let tooManyLeases = ErrorCode("too_many_leases")
    /// The password is right, but the account waits for its confirmation (`confirm_user`): only said to someone who
    /// proved the password, so that it never reveals an account.
    public static let accountUnconfirmed = ErrorCode("account_unconfirmed")
    /// A confirmation or password-reset token that is unknown, used already, replaced by a newer one, or expired.
    public static let invalidToken = ErrorCode("invalid_token")
    /// The seat is locked (by `lock_seat`, or by logind's lock of the session it follows): its active user's tokens
    /// and DPoP proofs are refused until `unlock` (or logind) unlocks it. `data.seat` names the seat.
    public static let seatLocked = ErrorCode("seat_locked")
    /// `unlock`: the PIN is wrong. Counted by the login throttle as a failed login of the user; after
    /// `[seats] lock_after_pin_failures` wrong PINs in a row, the user is logged out.
    public static let pinIncorrect = ErrorCode("pin_incorrect")
    /// `unlock`: the seat's active user has no PIN (`set_pin`); the seat stays locked.
    public static let pinNotSet = ErrorCode("pin_not_set")
    /// `login`, `login_wait` with `expect_email`: the provider authenticated an account whose email is not the one
    /// expected (the PAM user's). Nothing was committed, the provider's new session was revoked, and the attempt counts
    /// as a failed login of the expected account.
    public static let identityMismatch = ErrorCode("identity_mismatch")

    /// Every code this version of the protocol defines.
    public static let all: [ErrorCode] = [
        .invalidRequest, .unknownMethod, .invalidParams, .lineTooLong, .providerNotFound, .unsupportedCredentials,
        .invalidCredentials, .accountExists, .registrationDisabled, .userNotFound, .userLoggedOut, .noActiveUser,
        .conflict, .permissionDenied, .apiKeyNotFound, .providerUnavailable, .tooManyConnections, .internal,
        .providerError, .accessDenied, .expiredToken, .providerMisconfigured, .rateLimited, .shuttingDown,
        .userActiveElsewhere, .inhibited, .seatNotFound, .leaseNotFound, .tooManyLeases, .providerRejected,
        .accountUnconfirmed, .invalidToken, .invalidLink, .identityInUse, .notSupported,
        .seatLocked, .pinIncorrect, .pinNotSet,
        .identityMismatch,
    ]
}

/// The wire form of every error: `{"code": "<stable_code>", "message": "<for humans>"}`, plus `"data": {...}` for the
/// codes that carry details a program acts on (`rate_limited`: `{"retry_after": <seconds>}`).
///
/// `data` is absent, not null, for every other code, so error lines of older versions are unchanged and older clients
/// (which ignore unknown keys) read the new ones.
public struct ResponseError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    /// Machine-readable details of this error, as JSON-RPC's `error.data`; nil for most codes.
    public var data: [String: JSONValue]?

    public init(_ code: ErrorCode, _ message: String) {
        self.init(code, message, data: nil)
    }

    public init(_ code: ErrorCode, _ message: String, data: [String: JSONValue]?) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// A `rate_limited` error: try again in `retryAfter` whole seconds.
    public static func rateLimited(_ message: String, retryAfter seconds: Int) -> ResponseError {
        ResponseError(.rateLimited, message, data: ["retry_after": .int(Int64(seconds))])
    }

    /// `data.retry_after`: how many seconds to wait before trying again (`rate_limited`).
    public var retryAfter: Int? {
        guard case .int(let seconds)? = self.data?["retry_after"] else { return nil }
        return Int(exactly: seconds)
    }

    public var description: String { "\(self.message) (\(self.code.rawValue))" }
}
