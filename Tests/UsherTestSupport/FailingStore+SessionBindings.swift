import UsherCore
import UsherStore

/// The session bindings and endings of the database under a `FailingStore` (issue 37's `open_session`,
/// `user_status`): read as the database reads them; their writes go through `commit`, which may fail.
extension FailingStore: SessionBindingStore {
    package func loadSessionBindings() async throws -> [SessionBinding] {
        try await self.database.loadSessionBindings()
    }

    package func users(withEmail email: String) async throws -> [EmailUser] {
        try await self.database.users(withEmail: email)
    }

    package func email(ofUnixUser name: String) -> String? { nil }
}
