/// Whose users a peer may change in the ways that decide who a user is (link, unlink, delete, API keys) and whose
/// logins in progress it may collect: the rule of docs/protocol.md, "Whose user", in one place.
///
/// A local user never acts as another: adding an identity to a user, or planting a key that logs in as it, is as strong
/// as being that user, so it needs more than the `manage` permission that every local user may be granted. The
/// dispatcher works out a peer's ownership once per request (`MethodHandler.Call.ownership`); the registry checks it
/// where the change is made, against the user as it is then.
package enum Ownership: Sendable, Hashable {
    /// Root and usherd's own uid: every user, every login in progress.
    case everyone
    /// Any other peer: the users whose current session this uid opened (`User.sessionUID`), and the logins it began.
    case uid(UInt32)

    /// Whether something opened or begun by `owner` (nil: by nobody on record) is this peer's.
    package func owns(_ owner: UInt32?) -> Bool {
        switch self {
        case .everyone: true
        case .uid(let uid): owner == uid
        }
    }

    /// Throws `notYours` unless the user's current session was opened by this peer's uid (or the peer is privileged).
    ///
    /// - Parameter action: what the peer tried, for the message (`"delete"`, `"link identities to"`).
    package func require(_ user: User, to action: String) throws(SessionError) {
        guard self.owns(user.sessionUID) else { throw .notYours(userID: user.id, action: action) }
    }
}
