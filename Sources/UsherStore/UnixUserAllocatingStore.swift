import UsherCore
import UsherProtocol

/// The registry's store when `[unix_users]` is on: the database, plus each new user's Unix account written in the
/// transaction that adds the user, and the directory (`UnixUserDirectory`) brought up to date after each commit,
/// before the registry publishes the change and answers whoever asked for it. So a user that a login added has its
/// account, on disk and served, by the time the login is answered (a PAM stack looks the user up right after).
///
/// The registry commits one change at a time, so allocations never race each other.
package struct UnixUserAllocatingStore: SessionStore {
    let database: AppDatabase
    let directory: UnixUserDirectory
    private let now: @Sendable () -> Timestamp

    package init(database: AppDatabase, directory: UnixUserDirectory, now: @escaping @Sendable () -> Timestamp) {
        self.database = database
        self.directory = directory
        self.now = now
    }

    /// Loads the sessions and the accounts. Users that have none yet (on the device before `[unix_users]` was turned
    /// on, or added while it was off) get theirs in one transaction, before anything is served.
    package func loadSessions() async throws -> PersistedSessions {
        let sessions = try await self.database.loadSessions()
        self.directory.load(try await self.database.unixUserAllocations())
        let made = self.directory.allocate(for: sessions.users)
        if !made.isEmpty {
            do {
                try await self.database.recordUnixUsers(made, now: self.now())
            } catch {
                self.directory.release(made)
                throw error
            }
        }
        self.directory.published(saved: sessions.users, deleted: [])
        return sessions
    }

    package func commit(_ change: SessionChange) async throws {
        var change = change
        let made = self.directory.allocate(for: change.saved)
        if !made.isEmpty { change.pendingWrites.append(UnixUserRecording(allocations: made, now: self.now())) }
        do {
            try await self.database.commit(change)
        } catch {
            // Rolled back: the uids and names were never written, and are free again.
            self.directory.release(made)
            throw error
        }
        self.directory.published(saved: change.saved, deleted: change.deleted)
    }

    package func owner(of identity: Identity) async throws -> IdentityOwner? {
        try await self.database.owner(of: identity)
    }

    package func ownsIdentities(_ userID: String) async throws -> Bool {
        try await self.database.ownsIdentities(userID)
    }
}
