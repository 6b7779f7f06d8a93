import UsherProtocol

/// The registry's rule violations. The server maps them (and `ProviderError`) to wire errors in one place.
package enum SessionError: Error, Sendable, Equatable {
    case providerNotFound(String)
    case userNotFound(String)
    case userLoggedOut(String)
    case noActiveUser
    case conflict(expected: Int64, actual: Int64)
    /// The provider has no such capability (API keys, registration) for this user.
    case unsupported(String)
    case apiKeyNotFound(String)
    /// A `list_users` cursor this daemon did not issue.
    case invalidCursor
    /// The registry has not loaded its state yet.
    case notReady
    /// The daemon is stopping: no new changes or refreshes.
    case stopping
    /// The user is active on another seat, and the request did not say `move`.
    case userActiveElsewhere(userID: String, seat: String)
    /// Block leases hold the seat's active user in place.
    case inhibited(seat: String, holders: [LeaseInfo])
    case seatNotFound(String)
    case leaseNotFound(String)
    /// The peer's uid holds this many leases already.
    case tooManyLeases(limit: Int)
    /// The peer's permission is limited to seats, and the request is about `seat`, which is not one of them (nil: about
    /// no seat at all, such as a user who is active nowhere).
    case outsideSeatScope(seat: String?)
    /// `link_credentials` / `unlink_identity` cannot do this (anonymous credentials, the last identity).
    case invalidLink(String)
    /// The identity belongs to another user already.
    case identityInUse
    /// The provider cannot do this (`delete_user` at a provider without an account-deletion endpoint); the message says
    /// what can be done instead.
    case notSupported(String)
    /// Who owns the identity kept changing while a login or link completed (other logins and links raced it).
    case identitiesChanging
    /// A change that decides who a user is (`Ownership`), by a peer whose uid did not open the user's session.
    case notYours(userID: String, action: String)
    /// `login_wait` for a login another uid began.
    case loginNotYours
    /// The user is the active user of a locked seat: its tokens are refused until the seat is unlocked.
    case seatLocked(seat: String)
    /// `unlock`: the PIN is wrong (`failures`: wrong PINs in a row so far).
    case pinIncorrect(failures: Int)
    /// `unlock`: the seat's active user has no PIN.
    case pinNotSet(userID: String)
    /// `login`/`login_wait` with `expect_email`: the provider authenticated another account (its email, if any).
    case identityMismatch(expected: String, actual: String?)
    /// `close_session`: no session binding with this id.
    case bindingNotFound(String)
}
