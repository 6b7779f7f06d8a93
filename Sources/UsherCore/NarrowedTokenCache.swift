import Synchronization
import UsherProtocol

/// The narrowed tokens handed out, per (user, narrowing): in memory only, never on disk.
///
/// The registry fills it and drops a user's entries when the user logs out, is removed, revoked or switched away
/// from; `access_token` reads it on the event loop (`fresh`), as it reads the published state. Each entry has an id,
/// under which the registry schedules its refresh on the one timer queue (`schedulerKey`).
package final class NarrowedTokenCache: Sendable {
    package struct Key: Sendable, Hashable {
        package var userID: String
        package var narrowing: TokenNarrowing

        package init(userID: String, narrowing: TokenNarrowing) {
            self.userID = userID
            self.narrowing = narrowing
        }
    }

    struct Entry {
        var id: UInt64
        var token: NarrowedToken
        /// Whether a program got it since it was issued: one nobody asked for is dropped at its deadline, not
        /// refreshed.
        var used: Bool
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var keys: [UInt64: Key] = [:]
        var byUser: [String: Set<Key>] = [:]
        var nextID: UInt64 = 1
    }

    private let state = Mutex(State())

    /// The prefix of the timer queue's keys for narrowed tokens: user ids never hold control characters.
    static let schedulerPrefix = "\u{1}narrowed:"

    package init() {}

    package var count: Int { self.state.withLock { $0.entries.count } }

    /// The token for `key` when it stays valid for `min(minimum, lifetime − 1 s)` from `now`, and marks it used.
    package func fresh(_ key: Key, minValidMilliseconds minimum: Int64, now: Timestamp) -> NarrowedToken? {
        self.state.withLock { state in
            guard var entry = state.entries[key] else { return nil }
            let required = min(minimum, entry.token.lifetimeMilliseconds - 1000)
            let remaining = entry.token.expiresAt.millisecondsSinceEpoch - now.millisecondsSinceEpoch
            guard remaining > 0, remaining >= required else { return nil }
            if !entry.used {
                entry.used = true
                state.entries[key] = entry
            }
            return entry.token
        }
    }

    /// The token for `key` whatever its age, without marking it used (`dpop_proof` names the one a program holds).
    package func current(_ key: Key) -> NarrowedToken? {
        self.state.withLock { $0.entries[key]?.token }
    }

    /// Keeps `token` for `key`, replacing the one there; answers the entry's timer queue key.
    func store(_ token: NarrowedToken, for key: Key, used: Bool) -> String {
        self.state.withLock { state in
            let id: UInt64
            if let entry = state.entries[key] {
                id = entry.id
            } else {
                id = state.nextID
                state.nextID += 1
                state.keys[id] = key
                state.byUser[key.userID, default: []].insert(key)
            }
            state.entries[key] = Entry(id: id, token: token, used: used)
            return Self.schedulerKey(id)
        }
    }

    /// The entry a timer queue key names, with whether a program asked for it since it was issued.
    func entry(forSchedulerKey schedulerKey: String) -> (key: Key, token: NarrowedToken, used: Bool)? {
        guard schedulerKey.hasPrefix(Self.schedulerPrefix),
            let id = UInt64(schedulerKey.dropFirst(Self.schedulerPrefix.count))
        else { return nil }
        return self.state.withLock { state in
            guard let key = state.keys[id], let entry = state.entries[key] else { return nil }
            return (key, entry.token, entry.used)
        }
    }

    /// Drops one entry; answers its timer queue key.
    @discardableResult
    func remove(_ key: Key) -> String? {
        self.state.withLock { Self.unlink(key, in: &$0) }
    }

    /// Drops every entry of a user; answers their timer queue keys.
    func removeAll(of userID: String) -> [String] {
        self.state.withLock { state in
            (state.byUser[userID] ?? []).compactMap { Self.unlink($0, in: &state) }
        }
    }

    /// Takes `key`'s entry out of every index; its timer queue key, or nil when there was none.
    private static func unlink(_ key: Key, in state: inout State) -> String? {
        guard let entry = state.entries.removeValue(forKey: key) else { return nil }
        state.keys.removeValue(forKey: entry.id)
        state.byUser[key.userID]?.remove(key)
        if state.byUser[key.userID]?.isEmpty == true { state.byUser.removeValue(forKey: key.userID) }
        return Self.schedulerKey(entry.id)
    }

    /// Whether the user has narrowed tokens (cheap: the registry asks on every change of the user).
    func hasEntries(of userID: String) -> Bool { self.state.withLock { $0.byUser[userID] != nil } }

    static func schedulerKey(_ id: UInt64) -> String { Self.schedulerPrefix + String(id) }

    static func isSchedulerKey(_ key: String) -> Bool { key.hasPrefix(Self.schedulerPrefix) }
}
