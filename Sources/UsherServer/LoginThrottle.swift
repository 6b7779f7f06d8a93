import Foundation
import Synchronization
import UsherCore
import UsherProtocol

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
/// none at all, so those count against the peer only.
///
/// An attempt in flight counts as a pending failure: with delays in force, one attempt per key at a time, so opening
/// many connections at once buys no extra guesses. A success resets the account's count (not the peer's: a peer with
/// one good credential must not launder its failures); errors that say nothing about the credentials (a provider that
/// is down, malformed parameters) count for nothing.
///
/// Every check and update is O(1) under one lock. Memory is bounded: each table (accounts, peers) keeps at most
/// `max_tracked` entries in two generations, and a full current generation replaces the older one, so the entries
/// dropped are those least recently touched. Filling the table to evict an account's count takes `max_tracked / 2`
/// fresh failures, which the peer's own count throttles.
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
        fileprivate var account: String?
        fileprivate var peer: UInt32
        fileprivate var tracked: Bool
    }

    private struct Entry {
        var failures = 0
        var inFlight = 0
        var lastFailure: ContinuousClock.Instant
        var blockedUntil: ContinuousClock.Instant
    }

    /// A bounded map in two generations: O(1) lookups and inserts, and when `current` holds half the capacity it
    /// becomes `previous` (dropping the old `previous`). Entries touched since are moved forward on the way.
    private struct Table<Key: Hashable> {
        var current: [Key: Entry] = [:]
        var previous: [Key: Entry] = [:]

        mutating func take(_ key: Key) -> Entry? {
            if let entry = self.current[key] { return entry }
            return self.previous.removeValue(forKey: key)
        }

        mutating func put(_ key: Key, _ entry: Entry, capacity: Int) {
            if self.current[key] == nil, self.current.count >= max(1, capacity / 2) {
                self.previous = self.current
                self.current = [:]
            }
            self.current[key] = entry
        }

        mutating func remove(_ key: Key) {
            self.current.removeValue(forKey: key)
            self.previous.removeValue(forKey: key)
        }

        var count: Int { self.current.count + self.previous.count }
    }

    private struct State {
        var settings: LoginThrottleSettings
        var accounts = Table<String>()
        var peers = Table<UInt32>()
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

    private let state: Mutex<State>
    private let now: @Sendable () -> ContinuousClock.Instant

    /// Account keys longer than this are cut: no real email is longer, and a table entry stays small.
    static let maximumKeyBytes = 320

    /// - Parameter now: the monotonic time (tests pass a clock they move by hand). Monotonic, so that setting the
    ///   wall clock neither lifts a lockout nor extends one.
    package init(
        settings: LoginThrottleSettings = LoginThrottleSettings(),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.state = Mutex(State(settings: settings))
        self.now = now
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
        let bounded = String(decoding: name.utf8.prefix(Self.maximumKeyBytes), as: UTF8.self)
        return bounded.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// Admits an attempt, or refuses it with the longer of the account's and the peer's waits.
    package func begin(account: String?, peer: UInt32) throws(Refusal) -> Ticket {
        // Read before the lock (a clock call is not free), and never taken as earlier than an instant another
        // attempt already stored under it: see `State.now`.
        let read = self.now()
        let account = account.map(Self.accountKey)
        let (refusal, enabled): (Refusal?, Bool) = self.state.withLock { state in
            let now = state.now(read)
            let settings = state.settings
            guard settings.enabled else { return (nil, false) }
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
            return (refusal, true)
        }
        if let refusal { throw refusal }
        return Ticket(account: account, peer: peer, tracked: enabled)
    }

    /// Records how an admitted attempt ended.
    package func finish(_ ticket: Ticket, _ outcome: Outcome) {
        guard ticket.tracked else { return }
        let read = self.now()
        self.state.withLock { state in
            let now = state.now(read)
            let settings = state.settings
            if let account = ticket.account {
                var entry = state.accounts.take(account) ?? Entry(lastFailure: now, blockedUntil: now)
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
            self.finish(ticket, .succeeded)
            return result
        } catch {
            self.finish(ticket, classify(error))
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

extension LoginThrottle {
    /// The account a `login` attempt names before its credentials are checked, for the per-account count: the email
    /// of `email_password`, the username of an OpenID Connect `password` login; nil for every other type.
    package static func account(of credentials: [String: JSONValue]) -> String? {
        switch credentials["type"]?.stringValue {
        case CredentialType.emailPassword: credentials["email"]?.stringValue
        case "password": credentials["username"]?.stringValue
        default: nil
        }
    }

    /// What an error says about the credentials: refused credentials and `register`'s existing account (a probe for
    /// which emails have accounts) are failures; anything else taught nothing.
    package static func outcome(of error: any Error) -> Outcome {
        guard let error = error as? ProviderError else { return .inconclusive }
        switch error {
        case .invalidCredentials, .accountExists: return .failed
        default: return .inconclusive
        }
    }

    /// Runs a `login` under the throttle. Anonymous logins prove nothing and are never throttled.
    package func login<Result>(
        credentials: [String: JSONValue],
        peer: UInt32,
        _ body: () async throws -> Result
    ) async throws -> Result {
        guard credentials["type"]?.stringValue != CredentialType.anonymous else { return try await body() }
        return try await self.attempt(
            account: Self.account(of: credentials),
            peer: peer,
            classify: Self.outcome(of:),
            body
        )
    }

    /// Runs a `register` under the throttle: a throttled peer or email is refused before the password is hashed.
    package func register<Result>(
        email: String,
        peer: UInt32,
        _ body: () async throws -> Result
    ) async throws -> Result {
        try await self.attempt(account: email, peer: peer, classify: Self.outcome(of:), body)
    }
}
