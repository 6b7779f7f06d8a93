import UsherCore
import UsherProtocol

/// The Unix accounts of usher's users (`unix_user`, migration `v12-unix-users`): rows are added, never changed or
/// deleted, so a uid and a name once given stay that user's.
extension AppDatabase {
    /// Every allocation, of users on the device and of users removed from it.
    package func unixUserAllocations() async throws -> [UnixUserAllocation] {
        try await self.writer.read { db in
            var allocations: [UnixUserAllocation] = []
            try db.forEach(sql: #"SELECT user_id, uid, name FROM "unix_user""#) { row in
                // The schema keeps uids within UInt32 (`CHECK`).
                let uid = UInt32(truncatingIfNeeded: try row[1] as Int64)
                allocations.append(
                    UnixUserAllocation(userID: try row[0] as String, uid: uid, name: try row[2] as String)
                )
            }
            return allocations
        }
    }

    /// Writes `allocations` in one transaction (the accounts of users that were on the device before `[unix_users]`
    /// was turned on).
    package func recordUnixUsers(_ allocations: [UnixUserAllocation], now: Timestamp) async throws {
        let write = UnixUserRecording(allocations: allocations, now: now)
        try await self.writer.write { db in try write.perform(in: db) }
    }
}

/// New Unix accounts, written in the transaction of the change that adds their users (a pending write of that
/// change): the user and its account are on disk together or not at all.
package struct UnixUserRecording: DatabaseWrite, Hashable {
    package var allocations: [UnixUserAllocation]
    package var now: Timestamp

    package init(allocations: [UnixUserAllocation], now: Timestamp) {
        self.allocations = allocations
        self.now = now
    }

    /// Fails (and with it the change) if a uid or a name is somehow taken already: never two users with one uid.
    func perform(in db: Connection) throws {
        guard !self.allocations.isEmpty else { return }
        let insert = try db.statement(
            sql: #"INSERT INTO "unix_user" (user_id, uid, name, created_at) VALUES (?, ?, ?, ?)"#
        )
        for allocation in self.allocations {
            try insert.run([allocation.userID, Int64(allocation.uid), allocation.name, self.now.millisecondsSinceEpoch])
        }
    }
}
