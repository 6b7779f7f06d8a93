import Logging
import Synchronization
import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `[login_throttle]`: how failed logins slow further attempts down.
package struct LoginThrottleSettings: Sendable, Hashable {
    /// `enabled`: false turns throttling off.
    package var enabled = true
    /// `account_free_failures`: failures of one account that cost no wait.
    package var accountFreeFailures = 5
    /// `account_lockout_failures`: at this many failures the account is locked for `lockout`.
    package var accountLockoutFailures = 20
    /// `peer_free_failures`: failures from one peer uid that cost no wait.
    package var peerFreeFailures = 20
    /// `peer_lockout_failures`: at this many failures the peer uid is locked out for `lockout`.
    package var peerLockoutFailures = 100
    /// `first_delay`: the wait after the first failure beyond the free ones; it doubles with every further failure.
    package var firstDelay: Duration = .seconds(1)
    /// `max_delay`: the longest wait short of a lockout.
    package var maximumDelay: Duration = .seconds(60)
    /// `lockout`: how long a locked account or peer is refused.
    package var lockout: Duration = .seconds(15 * 60)
    /// `forget_after`: a count with no new failure for this long starts again from zero.
    package var forgetAfter: Duration = .seconds(3600)
    /// `max_tracked`: accounts (and, separately, peers) remembered at once; the least recently failed go first.
    package var maximumTracked = 10_000

    package init() {}
}

/// Slows password (and key, token, hook) guessing down: failed logins are counted per account and per peer uid; past a
/// few free failures every attempt waits a doubling delay, and at a threshold the account or peer is locked out for a
/// while. A refused attempt is answered `rate_limited` with `retry_after` before the credentials are looked at, so it
/// costs no scrypt hash, database read or hook run.
///
/// Which key an attempt counts against: its account, when the credentials name one before they are checked (the email
/// of `email_password` and `register`, the username of an OpenID Connect `password` login), and always the peer's uid.
/// An API key, a JWT, an ID token or a function payload names no account until it is verified, and a refused one names
/// none at all, so those count against the peer only. An account has two counts: its owner's (the uid of its last
/// successful login or its registration) and everyone else's, so that another uid's guessing cannot lock the owner
/// out (`AccountKey`).
///
/// An attempt in flight counts as a pending failure: with delays in force, one attempt per key at a time, so opening
/// many connections at once buys no extra guesses. A success resets the count it was counted in (not the peer's: a
/// peer with one good credential must not launder its failures) and makes the peer the account's owner; errors that
/// say nothing about the credentials (a provider that is down, malformed parameters) count for nothing. Counts,
/// lockouts and owners are stored before an attempt is answered and restored at start (`+Persistence`).
///
/// Every check and update is O(1) under one lock. Memory is bounded: each table (account sides, peers, owners) keeps
/// at most `max_tracked` entries in two generations (`GenerationTable`), so the entries dropped are those least
/// recently touched. Filling the table to evict an account's count takes `max_tracked / 2` fresh failures, which the
/// peer's own count throttles.
package final class LoginThrottle: Sendable {
    /// Why an attempt was refused.
    package struct Refusal: Error, Sendable, Hashable {
        package enum Scope: String, Sendable {
            case account
            case peer
        }
        package var scope: Scope
        /// When the next attempt may be made, from now.
        package var retryAfter: Duration

        package init(scope: Scope, retryAfter: Duration) {
            self.scope = scope
            self.retryAfter = retryAfter
        }

        /// `retry_after` as whole seconds, rounded up (at least 1), so that a client waiting that long is let in.
        package var retryAfterSeconds: Int {
            let (seconds, attoseconds) = self.retryAfter.components
            return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
        }
    }

    /// What the credentials proved, as far as throttling is concerned.
    package enum Outcome: Sendable {
        /// Wrong password, unknown key, a token or hook verdict that refused, an existing account at `register`.
        case failed
        case succeeded
        /// Nothing was learnt about the credentials (a provider that is down, malformed parameters).
        case inconclusive
    }

    /// An admitted attempt; `finish` must be called with it exactly once.
    package struct Ticket: Sendable {
        fileprivate var account: AccountKey?
        fileprivate var peer: UInt32
        fileprivate var tracked: Bool
    }

    /// Which count of an account an attempt is counted against: its owner's own, or everyone else's (pam_faillock's
    /// answer to a lockout that anyone can cause: the owner's failures and the others' are counted apart, so that
    /// another uid's guessing never locks the owner's own logins out).
    struct AccountKey: Hashable {
        var name: String
        /// The owner's uid when the attempt comes from the account's owner; nil for every other uid.
        var owner: UInt32?
    }

    struct Entry {
        var failures = 0
        var inFlight = 0
        var lastFailure: ContinuousClock.Instant
        var blockedUntil: ContinuousClock.Instant
    }

    struct State {
        var settings: LoginThrottleSettings
        var accounts = GenerationTable<AccountKey, Entry>()
        var peers = GenerationTable<UInt32, Entry>()
        /// Each account's owner: the uid of its last successful login (or its registration).
        var owners = GenerationTable<String, UInt32>()
        /// The latest instant any attempt has seen under the lock: time inside the throttle never goes backwards, even
        /// when a thread read the clock before another that took the lock first.
        var latest: ContinuousClock.Instant?

        /// `read`, or the latest instant already seen when that is later.
        mutating func now(_ read: ContinuousClock.Instant) -> ContinuousClock.Instant {
            let now = max(read, self.latest ?? read)
            self.latest = now
            return now
        }
    }

    let state: Mutex<State>
    let now: @Sendable () -> ContinuousClock.Instant
    /// Where counts and owners are kept across restarts (`LoginThrottle+Persistence.swift`); nil: in memory only.
    let store: (any LoginThrottleStore)?
    /// The wall clock, for what is stored (monotonic instants mean nothing to the next process).
    let wallNow: @Sendable () -> Timestamp
    let logger: Logger

    /// Account keys longer than this are cut: no real email is longer, and a table entry stays small.
    static let maximumKeyBytes = 320

    /// - Parameter now: the monotonic time (tests pass a clock they move by hand). Monotonic, so that setting the
    ///   wall clock neither lifts a lockout nor extends one.
    ///
    ///   - store: where counts and owners survive a restart (`restore()` reads them back); nil keeps them in memory.
    ///   - wallNow: the wall clock, for the stored times.
    package init(
        settings: LoginThrottleSettings = LoginThrottleSettings(),
        store: (any LoginThrottleStore)? = nil,
        logger: Logger = Logger(label: "usherd.throttle", factory: { _ in SwiftLogNoOpLogHandler() }),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        wallNow: @escaping @Sendable () -> Timestamp = { Timestamp.now() }
    ) {
        self.state = Mutex(State(settings: settings))
        self.store = store
        self.logger = logger
        self.now = now
        self.wallNow = wallNow
    }

    /// The settings; a configuration reload replaces them, and the counts carry on.
    package var settings: LoginThrottleSettings {
        get { self.state.withLock { $0.settings } }
        set { self.state.withLock { $0.settings = newValue } }
    }

    /// How many accounts and peers are remembered now.
    package var trackedCount: (accounts: Int, peers: Int) {
        self.state.withLock { ($0.accounts.count, $0.peers.count) }
    }

    /// The account key for an email or username: case-insensitive, trimmed, and bounded in length.
    package static func accountKey(_ name: String) -> String {
        // The key the local provider gives the account (NFC, then case-folded: `EmailAddress.key`), so that every
        // spelling of one email is one count; bounded after normalising, so that two spellings cannot count apart.
        let key = EmailAddress.key(name.trimmingWhitespace())
        return String(decoding: key.utf8.prefix(Self.maximumKeyBytes), as: UTF8.self)
    }

    /// Admits an attempt, or refuses it with the longer of the account's and the peer's waits. An attempt from the
    /// account's owner is checked against the owner's own count, any other against the others' count.
    ///
    /// - Parameter ownedAs: the account whose owner owns this count too (the hook count `hook:EMAIL` is owned by the
    ///   owner of the logins of EMAIL); nil: `account` itself.
    package func begin(account: String?, peer: UInt32, ownedAs: String? = nil) throws(Refusal) -> Ticket {
        // Read before the lock (a clock call is not free), and never taken as earlier than an instant another
        // attempt already stored under it: see `State.now`.
        let read = self.now()
        let name = account.map(Self.accountKey)
        let ownerName = ownedAs.map(Self.accountKey) ?? name
        let (refusal, enabled, account): (Refusal?, Bool, AccountKey?) = self.state.withLock { state in
            let now = state.now(read)
            let settings = state.settings
            let owner = ownerName.flatMap { state.owners.get($0) }
            let account = name.map { name in AccountKey(name: name, owner: owner == peer ? peer : nil) }
            guard settings.enabled else { return (nil, false, account) }
            var accountEntry = account.flatMap { state.accounts.take($0) }
            var peerEntry = state.peers.take(peer)
            var refusal: Refusal?
            if let wait = Self.wait(&accountEntry, now: now, settings, free: settings.accountFreeFailures) {
                refusal = Refusal(scope: .account, retryAfter: wait)
            }
            if let wait = Self.wait(&peerEntry, now: now, settings, free: settings.peerFreeFailures),
                wait > refusal?.retryAfter ?? .zero
            {
                refusal = Refusal(scope: .peer, retryAfter: wait)
            }
            if refusal == nil {
                accountEntry?.inFlight += 1
                peerEntry?.inFlight += 1
                accountEntry = accountEntry ?? Entry(inFlight: 1, lastFailure: now, blockedUntil: now)
                peerEntry = peerEntry ?? Entry(inFlight: 1, lastFailure: now, blockedUntil: now)
            }
            if let account, let accountEntry {
                state.accounts.put(account, accountEntry, capacity: settings.maximumTracked)
            }
            if let peerEntry { state.peers.put(peer, peerEntry, capacity: settings.maximumTracked) }
            return (refusal, true, account)
        }
        if let refusal { throw refusal }
        return Ticket(account: account, peer: peer, tracked: enabled)
    }

    /// Records how an admitted attempt ended; a success makes the peer the account's owner. Returns what changed,
    /// for the store (`attempt` stores it before answering).
    @discardableResult
    package func finish(_ ticket: Ticket, _ outcome: Outcome) -> Changes {
        guard ticket.tracked else { return Changes() }
        let read = self.now()
        return self.state.withLock { state in
            let now = state.now(read)
            let settings = state.settings
            var changes = Changes()
            // What the store must learn: failures, a success that reset an account's count, a new owner.
            if outcome == .failed { changes.peers.append(ticket.peer) }
            if let account = ticket.account {
                if outcome == .succeeded {
                    // Put back even when unchanged: an owner who keeps logging in is never the one forgotten.
                    let previous = state.owners.get(account.name)
                    state.owners.put(account.name, ticket.peer, capacity: settings.maximumTracked)
                    if previous != ticket.peer { changes.owners.append(account.name) }
                }
                var entry = state.accounts.take(account) ?? Entry(lastFailure: now, blockedUntil: now)
                if outcome == .failed || (outcome == .succeeded && entry.failures > 0) {
                    changes.accounts.append(account)
                }
                Self.settle(
                    &entry,
                    outcome,
                    now: now,
                    settings,
                    free: settings.accountFreeFailures,
                    lockoutAt: settings.accountLockoutFailures,
                    resetOnSuccess: true
                )
                if entry.failures == 0 && entry.inFlight == 0 {
                    state.accounts.remove(account)
                } else {
                    state.accounts.put(account, entry, capacity: settings.maximumTracked)
                }
            }
            var entry = state.peers.take(ticket.peer) ?? Entry(lastFailure: now, blockedUntil: now)
            Self.settle(
                &entry,
                outcome,
                now: now,
                settings,
                free: settings.peerFreeFailures,
                lockoutAt: settings.peerLockoutFailures,
                resetOnSuccess: false
            )
            if entry.failures == 0 && entry.inFlight == 0 {
                state.peers.remove(ticket.peer)
            } else {
                state.peers.put(ticket.peer, entry, capacity: settings.maximumTracked)
            }
            return changes
        }
    }

    /// Runs one attempt under the throttle: refused (throwing `Refusal`) before `body` runs, or admitted and then
    /// settled with what `classify` makes of the outcome.
    package func attempt<Result>(
        account: String?,
        peer: UInt32,
        classify: (any Error) -> Outcome,
        _ body: () async throws -> Result
    ) async throws -> Result {
        let ticket = try self.begin(account: account, peer: peer)
        do {
            let result = try await body()
            await self.persist(self.finish(ticket, .succeeded))
            return result
        } catch {
            // Stored before the failure is answered: a daemon killed right after cannot forget it.
            await self.persist(self.finish(ticket, classify(error)))
            throw error
        }
    }

    /// How long an attempt must still wait for this entry, or nil when it may go ahead. Forgets a stale count.
    private static func wait(
        _ entry: inout Entry?,
        now: ContinuousClock.Instant,
        _ settings: LoginThrottleSettings,
        free: Int
    ) -> Duration? {
        guard var current = entry else { return nil }
        if current.inFlight == 0, now - current.lastFailure >= settings.forgetAfter, now >= current.blockedUntil {
            current.failures = 0
        }
        entry = current
        if now < current.blockedUntil { return current.blockedUntil - now }
        // Attempts in flight are failures until they prove otherwise: past the free ones, one at a time.
        if current.inFlight > 0, current.failures + current.inFlight >= free {
            return settings.firstDelay
        }
        return nil
    }

    private static func settle(
        _ entry: inout Entry,
        _ outcome: Outcome,
        now: ContinuousClock.Instant,
        _ settings: LoginThrottleSettings,
        free: Int,
        lockoutAt: Int,
        resetOnSuccess: Bool
    ) {
        entry.inFlight = max(0, entry.inFlight - 1)
        switch outcome {
        case .failed:
            entry.failures += 1
            entry.lastFailure = now
            entry.blockedUntil = max(
                entry.blockedUntil,
                now
                    + Self.delay(
                        after: entry.failures,
                        settings,
                        free: free,
                        lockoutAt: lockoutAt
                    )
            )
        case .succeeded where resetOnSuccess:
            entry.failures = 0
            entry.blockedUntil = now
        case .succeeded, .inconclusive:
            break
        }
    }

    /// The wait after `failures` failures: none for the free ones, then `first_delay` doubling up to `max_delay`,
    /// and `lockout` from `lockoutAt` failures on.
    static func delay(after failures: Int, _ settings: LoginThrottleSettings, free: Int, lockoutAt: Int) -> Duration {
        if failures >= lockoutAt { return settings.lockout }
        guard failures > free else { return .zero }
        let doublings = min(failures - free - 1, 40)
        let delay = settings.firstDelay * (1 << doublings)
        return min(delay, settings.maximumDelay)
    }
}
