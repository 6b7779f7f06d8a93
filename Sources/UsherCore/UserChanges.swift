import UsherProtocol

// What the registry and the view answer about users: a user as committed by a change, with that change's
// generation. `UserInfo` (a user as clients see it) is shared vocabulary: it is the payload of `user_logged_in` and
// `user_changed`, which the core announces as it commits; the server maps these values to the protocol's results.

/// A change that leaves a user on the device (login, switch, link, profile update): the user as it committed.
package struct UserChange: Sendable, Hashable {
    package var generation: Int64
    /// The seat the user is active on after the change (nil when none, or on a device that does not name seats).
    package var seat: String?
    package var user: UserInfo

    package init(generation: Int64, seat: String? = nil, user: UserInfo) {
        self.generation = generation
        self.seat = seat
        self.user = user
    }
}

/// A seat's active user at a generation (`current_user`).
package struct ActiveUser: Sendable, Hashable {
    package var generation: Int64
    /// The seat, when the device names seats.
    package var seat: String?
    /// Nil: nobody is active there.
    package var user: UserInfo?
    /// Whether the seat is locked (`SessionRegistry+Locks`).
    package var locked: Bool

    package init(generation: Int64, seat: String? = nil, user: UserInfo?, locked: Bool = false) {
        self.generation = generation
        self.seat = seat
        self.user = user
        self.locked = locked
    }
}

/// Users in the order they were added, at a generation: all of them, or a page (`list_users`).
package struct UserPage: Sendable, Hashable {
    /// Where a page ends, and so where the next starts.
    package struct Position: Sendable, Hashable {
        /// The generation at which the page's last user was added: the next page starts after it.
        package var addedGeneration: Int64
        /// The generation the pass's first page was read at: users added after it are not in the pass, so that a
        /// user removed and added again during the pass (at the end of the order) is not listed a second time.
        package var passGeneration: Int64

        package init(addedGeneration: Int64, passGeneration: Int64) {
            self.addedGeneration = addedGeneration
            self.passGeneration = passGeneration
        }
    }

    package var generation: Int64
    package var users: [UserInfo]
    /// Where the next page starts; nil on the last page and without a limit.
    package var next: Position?

    package init(generation: Int64, users: [UserInfo], next: Position? = nil) {
        self.generation = generation
        self.users = users
        self.next = next
    }
}

/// A logout as committed: the user after it (an anonymous user is removed instead: `state` is then `removed`).
package struct Logout: Sendable, Hashable {
    package var generation: Int64
    package var user: UserInfo
    /// Whether the provider confirmed the revocation of the session's tokens.
    package var revoked: Bool
    /// The seat the user was active on until the logout (nil when none, or on a device that does not name seats).
    package var seat: String?

    package init(generation: Int64, user: UserInfo, revoked: Bool, seat: String? = nil) {
        self.generation = generation
        self.user = user
        self.revoked = revoked
        self.seat = seat
    }
}

/// A user taken off the device (`remove_user`), or deleted with its accounts (`delete_user`: `deleted` names the
/// identities whose accounts were deleted).
package struct UserRemoval: Sendable, Hashable {
    package var generation: Int64
    package var userID: String
    package var deleted: [Identity]

    package init(generation: Int64, userID: String, deleted: [Identity] = []) {
        self.generation = generation
        self.userID = userID
        self.deleted = deleted
    }
}

/// An identity unlinked from a user: the user after it (nil when it was removed, having nothing left to log in with).
package struct IdentityUnlinking: Sendable, Hashable {
    package var generation: Int64
    package var user: UserInfo?
    package var removed: Bool
    /// Whether the provider confirmed the revocation of an ended session (true when none ended).
    package var revoked: Bool

    package init(generation: Int64, user: UserInfo?, removed: Bool, revoked: Bool) {
        self.generation = generation
        self.user = user
        self.removed = removed
        self.revoked = revoked
    }
}
