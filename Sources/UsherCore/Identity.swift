import UsherProtocol

/// Who owns an identity, as the store records it: the user's id, and every identity of that user, in the order they
/// were linked. The store keeps these for users removed from the device too, so that logging in again with any of a
/// user's identities finds the same id.
package struct IdentityOwner: Sendable, Hashable {
    package var userID: String
    package var identities: [Identity]

    package init(userID: String, identities: [Identity]) {
        self.userID = userID
        self.identities = identities
    }
}
