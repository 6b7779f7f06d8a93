import UsherProtocol

// What the registry and the view answer about users. Where the answer is exactly a protocol result, the core answers
// with that result's type (generated from varlink/io.usher.Session.varlink) under a name of its own: one type, no
// mapping. `UserInfo`, a user as clients see it, is shared vocabulary too: it is the payload of `user_logged_in` and
// `user_changed`, which the core announces as it commits.

/// A change that leaves a user on the device (login, switch, link, profile update): the user as it committed, with
/// the change's generation and the seat the user is active on after it (nil when none).
package typealias UserChange = UserResult

/// A seat's active user at a generation (`current_user`): nil when nobody is active there.
package typealias ActiveUser = CurrentUserRequest.Result

/// Users in the order they were added, at a generation: all of them, or a page (`list_users`). Not `list_users`'
/// result: the core's `next` is a position it can compare, the wire's an opaque cursor (`ListUsersRequest.Cursor`),
/// which the server writes from it.
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
package typealias Logout = LogoutRequest.Result

/// A user taken off the device (`remove_user`), or deleted with its accounts (`delete_user`: `deleted` names the
/// identities whose accounts were deleted). `remove_user`'s answer is the same without `deleted`.
package typealias UserRemoval = DeleteUserRequest.Result

extension UserRemoval {
    /// A removal that deleted no account.
    package init(generation: Int64, userID: String) {
        self.init(generation: generation, userID: userID, deleted: [])
    }
}

/// An identity unlinked from a user: the user after it (nil when it was removed, having nothing left to log in with).
package typealias IdentityUnlinking = UnlinkIdentityRequest.Result
