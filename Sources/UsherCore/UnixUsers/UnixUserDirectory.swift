import Logging
import Synchronization

/// The Unix accounts of usher's users, as `io.systemd.UserDatabase` serves them: every allocation ever made (uid and
/// name, reserved for good) and the records of the users on the device, indexed by name and by uid.
///
/// Read on the event loops, under a lock held for one dictionary lookup: a lookup costs the same with ten users or
/// 100,000, and never waits for the registry. A user's records are encoded at its first lookup after it changed, and
/// kept. Changed only by the store as it commits the registry's changes
/// (`UnixUserAllocatingStore`), one commit at a time: `allocate` reserves names and uids for the users a change adds,
/// the commit writes them in the change's own transaction, and `published` (or `release`, when the commit failed)
/// follows before the registry answers whoever asked for the change. So a user is never on the device without its
/// account for longer than the commit takes, and a uid once written is never given to another user.
package final class UnixUserDirectory: Sendable {
    /// The service name records say they come from.
    package static let serviceName = "io.usher.Users"

    /// One user's records (`record` and `group` are JSON objects).
    package struct Entry: Sendable {
        package var allocation: UnixUserAllocation
        package var realName: String?
        package var email: String?
        package var record: [UInt8]
        package var group: [UInt8]
    }

    /// A served user as the index keeps it: its records encoded at the first lookup after it changed, so that
    /// loading 100,000 users encodes nothing, and a user nobody looks up costs no encoding.
    private struct Served {
        var allocation: UnixUserAllocation
        var realName: String?
        var email: String?
        var records: (record: [UInt8], group: [UInt8])?
    }

    private struct Index {
        /// Every allocation, of users on the device and of users removed from it (whose names and uids stay taken).
        var allocations: [String: UnixUserAllocation] = [:]
        var userOfName: [String: String] = [:]
        var userOfUID: [UInt32: String] = [:]
        /// The records served: users on the device, by user id.
        var served: [String: Served] = [:]
        /// Where the search for a free uid starts: every uid below it in the range is taken.
        var nextUID: UInt32
    }

    package let settings: UnixUserSettings
    private let localAccounts: @Sendable () -> LocalAccountNames
    private let encode: @Sendable (UnixUserRecord) -> (record: [UInt8], group: [UInt8])
    private let index: Mutex<Index>
    private let logger: Logger

    /// - Parameters:
    ///   - localAccounts: the names and ids the device's own account files use, read when allocating.
    ///   - encode: a user's record and its private group's, as JSON objects (the server owns the bytes on the wire).
    package init(
        settings: UnixUserSettings,
        localAccounts: @escaping @Sendable () -> LocalAccountNames,
        encode: @escaping @Sendable (UnixUserRecord) -> (record: [UInt8], group: [UInt8]),
        logger: Logger = Logger(label: "usher.unix-users")
    ) {
        self.settings = settings
        self.localAccounts = localAccounts
        self.encode = encode
        self.logger = logger
        self.index = Mutex(Index(nextUID: settings.uidRange.lowerBound))
    }

    // MARK: - Reads

    /// The record of the user on the device named `name`.
    package func user(named name: String) -> Entry? {
        self.entry(self.index.withLock { index in index.userOfName[name].flatMap { index.served[$0] } })
    }

    /// The record of the user on the device with `uid`.
    package func user(uid: UInt32) -> Entry? {
        self.entry(self.index.withLock { index in index.userOfUID[uid].flatMap { index.served[$0] } })
    }

    /// Every record served, by uid.
    package func users() -> [Entry] {
        self.index.withLock { Array($0.served.values) }.sorted { $0.allocation.uid < $1.allocation.uid }.compactMap {
            self.entry($0)
        }
    }

    /// The names of the users served, by uid (for memberships: no record encoded).
    package func userNames() -> [String] {
        self.index.withLock { $0.served.values.map(\.allocation) }.sorted { $0.uid < $1.uid }.map(\.name)
    }

    /// A served user's records, encoded (outside the lock) and kept if they were not yet.
    private func entry(_ served: Served?) -> Entry? {
        guard let served else { return nil }
        if let records = served.records {
            return Entry(
                allocation: served.allocation,
                realName: served.realName,
                email: served.email,
                record: records.record,
                group: records.group
            )
        }
        let records = self.encode(self.contents(served))
        self.index.withLock { index in
            // Kept only if the user did not change meanwhile (two threads encoding at once keep equal bytes).
            let id = served.allocation.userID
            if let current = index.served[id], current.realName == served.realName, current.email == served.email {
                index.served[id]?.records = records
            }
        }
        return Entry(
            allocation: served.allocation,
            realName: served.realName,
            email: served.email,
            record: records.record,
            group: records.group
        )
    }

    /// The allocation of a user id, served or reserved.
    package func allocation(of userID: String) -> UnixUserAllocation? {
        self.index.withLock { $0.allocations[userID] }
    }

    // MARK: - Changes (one at a time: the store's commits)

    /// Takes the allocations the store holds (at start, before anything is served).
    package func load(_ allocations: [UnixUserAllocation]) {
        self.index.withLock { index in
            // Sized once: 100,000 users would otherwise grow each table seventeen times.
            index.allocations.reserveCapacity(index.allocations.count + allocations.count)
            index.userOfName.reserveCapacity(index.userOfName.count + allocations.count)
            index.userOfUID.reserveCapacity(index.userOfUID.count + allocations.count)
            for allocation in allocations { Self.insert(allocation, into: &index) }
        }
    }

    /// Reserves a uid and a name for each of `users` that should have an account and has none yet; the caller
    /// writes them durably, then calls `published` (or `release` if the write failed).
    package func allocate(for users: some Sequence<User>) -> [UnixUserAllocation] {
        let needing = self.index.withLock { index in
            users.filter { Self.isEligible($0) && index.allocations[$0.id] == nil }
        }
        guard !needing.isEmpty else { return [] }
        // Outside the lock: reads /etc/passwd and /etc/group. Nothing else changes the index meanwhile (one change at
        // a time), and readers only look.
        let local = self.localAccounts()
        return self.index.withLock { index in
            var made: [UnixUserAllocation] = []
            for user in needing {
                while index.nextUID <= self.settings.uidRange.upperBound,
                    index.userOfUID[index.nextUID] != nil || local.ids.contains(index.nextUID)
                {
                    index.nextUID += 1
                }
                guard index.nextUID <= self.settings.uidRange.upperBound else {
                    self.logger.error(
                        "unix_users: every uid of uid_range is taken; the user gets no Unix account",
                        metadata: ["user.id": "\(user.id)", "uid_range": "\(self.settings.uidRange)"]
                    )
                    continue
                }
                // The profile's text is decoded only when it holds the claim: most hold none.
                let preferred =
                    user.profile.json.contains("\"preferred_username\"")
                    ? user.profile["preferred_username"]?.stringValue : nil
                let base = UnixUserName.base(preferredUsername: preferred, email: user.email)
                var attempt = 1
                var name = base
                while index.userOfName[name] != nil || local.names.contains(name)
                    || UnixUserName.reserved.contains(name)
                {
                    attempt += 1
                    name = UnixUserName.candidate(base, attempt: attempt)
                }
                let allocation = UnixUserAllocation(userID: user.id, uid: index.nextUID, name: name)
                index.nextUID += 1
                Self.insert(allocation, into: &index)
                made.append(allocation)
            }
            return made
        }
    }

    /// Gives back allocations whose write failed (the commit was rolled back).
    package func release(_ allocations: [UnixUserAllocation]) {
        self.index.withLock { index in
            for allocation in allocations {
                index.allocations[allocation.userID] = nil
                index.userOfName[allocation.name] = nil
                index.userOfUID[allocation.uid] = nil
                index.served[allocation.userID] = nil
                index.nextUID = min(index.nextUID, max(allocation.uid, self.settings.uidRange.lowerBound))
            }
        }
    }

    /// After a commit: the records of the saved users (new, or changed) and of no deleted one. A deleted user's uid
    /// and name stay reserved.
    package func published(saved: some Sequence<User>, deleted: some Sequence<String>) {
        self.index.withLock { index in
            index.served.reserveCapacity(index.served.count + saved.underestimatedCount)
            for id in deleted { index.served[id] = nil }
            for user in saved where Self.isEligible(user) {
                guard let allocation = index.allocations[user.id] else { continue }
                if let served = index.served[user.id], served.realName == user.name, served.email == user.email {
                    continue
                }
                index.served[user.id] = Served(allocation: allocation, realName: user.name, email: user.email)
            }
        }
    }

    private static func insert(_ allocation: UnixUserAllocation, into index: inout Index) {
        index.allocations[allocation.userID] = allocation
        index.userOfName[allocation.name] = allocation.userID
        index.userOfUID[allocation.uid] = allocation.userID
    }

    /// Whether a user gets a Unix account: every user but an anonymous guest (no person to log in as).
    static func isEligible(_ user: User) -> Bool { !user.isAnonymous }

    /// What the records of a served user say, for the encoder.
    private func contents(_ served: Served) -> UnixUserRecord {
        let allocation = served.allocation
        return UnixUserRecord(
            allocation: allocation,
            realName: served.realName,
            email: served.email,
            homeDirectory: self.settings.home(name: allocation.name, uid: allocation.uid),
            shell: self.settings.shell,
            memberOf: self.settings.groups
        )
    }
}
