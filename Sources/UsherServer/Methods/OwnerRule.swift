/// What a method needs besides its permission, by whose user or login it is about (docs/protocol.md, "Whose user").
///
/// `manage` lets a peer log users in and out; it does not make the peer every user. Changing who a user is (the
/// identities that log in as it, the keys that do, the account itself) is as strong as being that user, so those
/// methods also need the peer to own the user: to be root, usherd's own uid, or the uid that opened the user's current
/// session. The dispatcher refuses `administrator` methods itself; the other rules are checked by the registry against
/// the user as it is when the change is made, with the call's `Ownership`.
package enum OwnerRule: String, Sendable, CaseIterable {
    /// The permission is enough.
    case none
    /// The user the request is about must be the peer's (its uid opened the user's current session).
    case user
    /// The login in progress must be one the peer's uid began; with `link_to`, the user must be the peer's too.
    case login
    /// Root and usherd's own uid only: an administrator's act on an account whose owner is not asked.
    case administrator
}
