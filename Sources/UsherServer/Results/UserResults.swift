import UsherCore
import UsherProtocol

// The protocol's results for what the registry and the view answer about users where the core's value is not the
// result itself (UserChanges.swift says which are): a page of users, whose position is the wire's cursor, and
// `remove_user`'s answer, a removal without its deleted accounts.

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

extension RemoveUserRequest.Result {
    init(_ removal: UserRemoval) {
        self.init(generation: removal.generation, userID: removal.userID)
    }
}
