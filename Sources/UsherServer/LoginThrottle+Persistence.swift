import Logging
import UsherCore
import UsherProtocol

/// Keeping counts, lockouts and owners across restarts.
///
/// Why: a restart that forgets every count lifts every lockout and hands a guesser a fresh budget, and a guesser
/// who can crash the daemon (or wait for an update) would get one per restart; an owner forgotten at a restart would
/// let the next guesser lock the owner out again. So every failure (and every success that resets a count, and every
/// new owner) is stored before the attempt is answered, and `restore()` reads them back at start. What is stored is
/// small: a row per peer or account side that has failed within `forget_after`, and a row per account that anyone
/// logged in to. Attempts in flight are not stored: one killed by a crash before it ended is not counted.
extension LoginThrottle {
    /// What `finish` changed, for the store.
    package struct Changes: Sendable {
        var accounts: [AccountKey] = []
        var peers: [UInt32] = []
        var owners: [String] = []

        var isEmpty: Bool { self.accounts.isEmpty && self.peers.isEmpty && self.owners.isEmpty }
    }

    /// The stored key of a peer's count.
    static func storedKey(peer: UInt32) -> String { "peer:\(peer)" }

    /// The stored key of one side of an account's count: `account:<owner uid>:<name>` for the owner's own,
    /// `account:*:<name>` for everyone else's.
    static func storedKey(_ account: AccountKey) -> String {
        "account:\(account.owner.map(String.init) ?? "*"):\(account.name)"
    }

    /// Stores `changes`, reading the current values inside the store's transaction (see `LoginThrottleStore`). A
    /// failure to store is logged; the counts in memory still apply.
    func persist(_ changes: Changes) async {
        guard let store = self.store, !changes.isEmpty else { return }
        do {
            try await store.saveLoginThrottle { self.records(of: changes) }
        } catch {
            self.logger.error(
                "could not store the login throttle's counts; they apply until the daemon stops",
                metadata: ["error": "\(error)"]
            )
        }
    }

    /// The stored form of what `changes` names, as it is now.
    private func records(of changes: Changes) -> LoginThrottleRecords {
        let monotonicNow = self.now()
        let wallNow = self.wallNow()
        func wall(_ instant: ContinuousClock.Instant) -> Timestamp {
            let (seconds, attoseconds) = (instant - monotonicNow).components
            return wallNow.adding(milliseconds: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        }
        func count(_ key: String, _ entry: Entry?) -> LoginThrottleRecords.Count {
            guard let entry else {
                return LoginThrottleRecords.Count(key: key, failures: 0, lastFailure: wallNow, blockedUntil: wallNow)
            }
            return LoginThrottleRecords.Count(
                key: key,
                failures: entry.failures,
                lastFailure: wall(entry.lastFailure),
                blockedUntil: wall(entry.blockedUntil)
            )
        }
        return self.state.withLock { state in
            var records = LoginThrottleRecords()
            for account in changes.accounts {
                records.counts.append(count(Self.storedKey(account), state.accounts.get(account)))
            }
            for peer in changes.peers {
                records.counts.append(count(Self.storedKey(peer: peer), state.peers.get(peer)))
            }
            for name in changes.owners {
                guard let uid = state.owners.get(name) else { continue }
                records.owners.append(LoginThrottleRecords.Owner(account: name, uid: uid, since: wallNow))
            }
            return records
        }
    }

    /// Reads the stored counts and owners back (at start, before any attempt). Stored times are converted to this
    /// process's clock, a lockout shortened to at most `lockout` from now (a wall clock set back must not extend it).
    package func restore() async throws {
        guard let store = self.store else { return }
        let settings = self.settings
        let wallNow = self.wallNow()
        let forgetAfter = Self.milliseconds(settings.forgetAfter)
        let records = try await store.loadLoginThrottle(
            forgottenBefore: wallNow.adding(milliseconds: -forgetAfter),
            maximumOwners: settings.maximumTracked / 2
        )
        let monotonicNow = self.now()
        func instant(_ timestamp: Timestamp, notAfter limit: Duration) -> ContinuousClock.Instant {
            let offset = timestamp.millisecondsSinceEpoch - wallNow.millisecondsSinceEpoch
            return monotonicNow + min(.milliseconds(offset), limit)
        }
        self.state.withLock { state in
            for owner in records.owners.reversed() {
                state.owners.put(owner.account, owner.uid, capacity: settings.maximumTracked)
            }
            for count in records.counts where count.failures > 0 {
                let entry = Entry(
                    failures: count.failures,
                    lastFailure: instant(count.lastFailure, notAfter: .zero),
                    blockedUntil: instant(count.blockedUntil, notAfter: settings.lockout)
                )
                if let peer = Self.peer(storedKey: count.key) {
                    state.peers.put(peer, entry, capacity: settings.maximumTracked)
                } else if let account = Self.account(storedKey: count.key) {
                    state.accounts.put(account, entry, capacity: settings.maximumTracked)
                }
            }
        }
    }

    static func peer(storedKey key: String) -> UInt32? {
        guard key.hasPrefix("peer:") else { return nil }
        return UInt32(key.dropFirst("peer:".count))
    }

    static func account(storedKey key: String) -> AccountKey? {
        guard key.hasPrefix("account:") else { return nil }
        let rest = key.dropFirst("account:".count)
        guard let colon = rest.firstIndex(of: ":") else { return nil }
        let owner = rest[..<colon]
        let name = String(rest[rest.index(after: colon)...])
        if owner == "*" { return AccountKey(name: name, owner: nil) }
        guard let uid = UInt32(owner) else { return nil }
        return AccountKey(name: name, owner: uid)
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
