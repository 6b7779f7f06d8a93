import UsherCore
import UsherProtocol

// The protocol's results for what the registry and the view answer about users: one initializer per core value, the
// only place each is mapped. The users themselves are `UserInfo` on both sides (the events' vocabulary).

extension UserResult {
    /// `login`, `switch_user`, `login_wait`, `link_credentials`, `update_profile`, `refresh_profile`.
    init(_ change: UserChange) {
        self.init(generation: change.generation, user: change.user, seat: change.seat)
    }
}

extension CurrentUserRequest.Result {
    init(_ active: ActiveUser) {
        self.init(generation: active.generation, seat: active.seat, user: active.user, locked: active.locked)
    }
}

extension ListUsersRequest.Result {
    init(_ page: UserPage) {
        self.init(
            generation: page.generation,
            users: page.users,
            next: page.next.map { ListUsersRequest.Cursor($0).text }
        )
    }
}

extension ListUsersRequest.Cursor {
    init(_ position: UserPage.Position) {
        self.init(addedGeneration: position.addedGeneration, passGeneration: position.passGeneration)
    }
}

extension UserPage.Position {
    /// The position `after` names, only in the exact form `next` is written (`invalid_cursor` otherwise).
    init(after text: String) throws(SessionError) {
        guard let cursor = ListUsersRequest.Cursor(text) else { throw .invalidCursor }
        self.init(addedGeneration: cursor.addedGeneration, passGeneration: cursor.passGeneration)
    }
}

extension LogoutRequest.Result {
    init(_ logout: Logout) {
        self.init(generation: logout.generation, user: logout.user, revoked: logout.revoked, seat: logout.seat)
    }
}

extension RemoveUserRequest.Result {
    init(_ removal: UserRemoval) {
        self.init(generation: removal.generation, userID: removal.userID)
    }
}

extension DeleteUserRequest.Result {
    init(_ removal: UserRemoval) {
        self.init(generation: removal.generation, userID: removal.userID, deleted: removal.deleted)
    }
}

extension UnlinkIdentityRequest.Result {
    init(_ unlinking: IdentityUnlinking) {
        self.init(
            generation: unlinking.generation,
            user: unlinking.user,
            removed: unlinking.removed,
            revoked: unlinking.revoked
        )
    }
}
