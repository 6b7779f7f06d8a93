import Logging
import ServiceLifecycle
import Synchronization
import UsherProtocol

/// The audit trail: one structured record per audited call and per refused request (action, user, peer, outcome;
/// never a token).
///
/// Why records are coalesced: a program asks for a token before every API call it makes, and a peer without
/// permission can loop a request it may not make; a line per request would make the log the daemon's main cost and
/// let a peer flood it. So identical records (same peer uid and pid, action, user, outcome and, for a token, the
/// same token, identified by its expiry and, for a narrowed one, its audience and scopes: `distinguishingDetails`)
/// are coalesced, whatever the outcome: the first is written, repeats within
/// `window` only increment a counter, and when the window ends one summary line with the first one's fields says how
/// many there were (`repeated=N`). Different records (every login, switch, logout, ...) are each written.
///
/// Why nothing is written on the request path: `record(...)` only updates a table under a lock (a counter increment
/// for a repeat) and wakes `run()`, a service of the daemon, which writes first records at once and summaries when
/// their window ends. The table is bounded (`maximumTracked` keys; a full table retires its older half, whose
/// records and counts are written by `run()`), so nothing is lost and nothing grows without bound; should retired
/// records pile up beyond the bound faster than `run()` writes them, the request that finds them writes them itself
/// (back-pressure, rather than losing a record or growing).
///
/// Every line, first record or summary, is written through the logger of the connection that made the record, so it
/// counts against that peer uid's `PeerLogBudget`: coalescing folds one process's repeats, the budget bounds what a
/// uid can make differ (a new user id per denied request, a new process per lease).
///
/// Values that come from the request (the user id) are cut to `maximumValueBytes`; the log handler escapes every
/// control character in every field.
package final class AuditLog: Sendable {
    fileprivate struct Key: Hashable {
        var uid: UInt32
        var pid: Int32
        var action: String
        var outcome: String
        var userID: String?
        /// Which token was handed out (its expiry in milliseconds): another token is another record.
        var token: Int64?
        /// The values of `distinguishingDetails` in the record's details ("" where absent).
        var distinguishing: [String]
    }

    /// Details that tell records apart, where every other detail is written with the first record and not compared:
    /// two tokens narrowed for different audiences or scopes are two tokens, even when they expire together.
    /// (`client_gone`: a call whose client had left is not folded into the same call answered.)
    package static let distinguishingDetails = ["token.audience", "token.scopes", "client_gone"]

    /// A record being counted.
    fileprivate struct Entry {
        /// When the first record happened, in order: lines are written in the order their records happened.
        var sequence: UInt64
        var windowEnd: ContinuousClock.Instant
        var repeated = 0
        /// Whether the first record is still to be written.
        var firstPending = true
        var metadata: Logger.Metadata
        /// The connection's logger (with its metadata), for the first record.
        var logger: Logger
    }

    fileprivate struct State {
        var current: [Key: Entry] = [:]
        var previous: [Key: Entry] = [:]
        /// Entries that left the table with something still to write.
        var retired: [Entry] = []
        /// Keys whose first record is (or was, when it has been retired since) still to be written.
        var unwritten: [Key] = []
        var sequence: UInt64 = 0
        /// No window in the table ends before this.
        var earliestWindowEnd: ContinuousClock.Instant?
    }

    /// Request values (user ids) longer than this are cut.
    package static let maximumValueBytes = 256

    private let window: Duration
    private let maximumTracked: Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(State())
    /// Wakes `run()` when there is a first record to write (a buffer of one: wake-ups coalesce).
    private let wakes: AsyncStream<Void>
    private let wakeUp: AsyncStream<Void>.Continuation

    /// - Parameters:
    ///   - window: how long repeats are counted before a summary is written.
    ///   - maximumTracked: how many distinct records are counted at once.
    ///   - now: the monotonic time (tests pass a clock they move by hand).
    package init(
        window: Duration = .seconds(60),
        maximumTracked: Int = 4096,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.window = window
        self.maximumTracked = max(2, maximumTracked)
        self.now = now
        (self.wakes, self.wakeUp) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Records one audited call or refused request. Writes nothing (see the type's comment).
    ///
    /// - Parameters:
    ///   - tokenExpiresAt: for a token handed out, its expiry: it tells tokens apart without the token.
    ///   - details: fields written with the first record of a window and not compared (a lease's id: a program
    ///     taking a lease again and again is one record and a count, not a line per lease), except those of
    ///     `distinguishingDetails`.
    package func record(
        action: String,
        userID: String?,
        outcome: String,
        permission: Permission? = nil,
        error: ResponseError? = nil,
        peer: PeerCredentials,
        executable: String?,
        logger: Logger,
        tokenExpiresAt: Timestamp? = nil,
        details: Logger.Metadata = [:]
    ) {
        let key = Key(
            uid: peer.uid,
            pid: peer.pid,
            action: action,
            outcome: outcome,
            userID: userID.map(Self.bounded),
            token: tokenExpiresAt?.millisecondsSinceEpoch,
            distinguishing: details.isEmpty ? [] : Self.distinguishingDetails.map { details[$0].map { "\($0)" } ?? "" }
        )
        let now = self.now()
        // The common case, a repeat, is one lookup and an increment under the lock.
        if self.state.withLock({ $0.countRepeat(of: key, at: now) }) { return }

        var metadata: Logger.Metadata = [
            "action": "\(action)", "outcome": "\(outcome)", "peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)",
        ]
        if let userID = key.userID { metadata["user.id"] = "\(userID)" }
        if let executable { metadata["peer.exe"] = "\(executable)" }
        if let permission { metadata["permission"] = "\(permission.rawValue)" }
        if let retryAfter = error?.retryAfter { metadata["retry_after"] = "\(retryAfter)" }
        if let tokenExpiresAt { metadata["token.expires_at"] = "\(tokenExpiresAt)" }
        metadata.merge(details) { current, _ in current }
        let overflow: [Entry]? = self.state.withLock { state in
            // State may have changed since the first look: another request may have opened this key's window.
            if state.countRepeat(of: key, at: now) { return nil }
            state.open(key, at: now, window: self.window, maximumTracked: self.maximumTracked) {
                Entry(sequence: $0, windowEnd: now + self.window, metadata: metadata, logger: logger)
            }
            guard state.retired.count > self.maximumTracked else { return [] }
            defer { state.retired = [] }
            return state.retired
        }
        guard let overflow else { return }
        if !overflow.isEmpty { self.write(Self.lines(of: overflow)) }
        self.wakeUp.yield()
    }

    /// Writes the first records not yet written, and the summaries of the windows that have ended (all of them with
    /// `all`, forgetting every key). `run()` calls it; tests call it to write what is pending without running `run()`.
    package func flush(all: Bool = false) {
        let now = self.now()
        let lines: [Line] = self.state.withLock { state in
            var entries = state.retired
            state.retired = []
            var firsts: [Entry] = []
            for key in state.unwritten {
                if state.current[key]?.firstPending == true {
                    firsts.append(state.current[key]!)
                    state.current[key]!.firstPending = false
                } else if state.previous[key]?.firstPending == true {
                    firsts.append(state.previous[key]!)
                    state.previous[key]!.firstPending = false
                }
            }
            state.unwritten = []
            if all || state.earliestWindowEnd.map({ now >= $0 }) == true {
                entries += state.removeEnded(at: now, all: all)
            }
            let firstLines = firsts.map { Line(sequence: $0.sequence, isSummary: false, entry: $0) }
            return firstLines + Self.lines(of: entries)
        }
        self.write(lines)
    }

    /// How many keys are being counted now.
    package var trackedCount: Int { self.state.withLock { $0.current.count + $0.previous.count } }

    /// A line to write: the first record of an entry or its summary.
    private struct Line {
        var sequence: UInt64
        var isSummary: Bool
        var entry: Entry
    }

    /// What is left to write of `entries`: their pending first records and their counts.
    private static func lines(of entries: [Entry]) -> [Line] {
        var lines: [Line] = []
        for entry in entries {
            if entry.firstPending { lines.append(Line(sequence: entry.sequence, isSummary: false, entry: entry)) }
            if entry.repeated > 0 { lines.append(Line(sequence: entry.sequence, isSummary: true, entry: entry)) }
        }
        return lines
    }

    private func write(_ lines: [Line]) {
        for line in lines.sorted(by: { ($0.sequence, $0.isSummary ? 1 : 0) < ($1.sequence, $1.isSummary ? 1 : 0) }) {
            var metadata = line.entry.metadata
            let level: Logger.Level = metadata["outcome"] == "denied" ? .notice : .info
            // Summaries too go through the connection's logger: they count against its peer's budget.
            if line.isSummary { metadata["repeated"] = "\(line.entry.repeated)" }
            line.entry.logger.log(level: level, "audit", metadata: metadata)
        }
    }

    /// `value`, cut to `maximumValueBytes` UTF-8 bytes (at a character boundary) with a marker saying how long it was.
    static func bounded(_ value: String) -> String {
        guard value.utf8.count > Self.maximumValueBytes else { return value }
        var cut = ""
        var bytes = 0
        for character in value {
            bytes += character.utf8.count
            if bytes > Self.maximumValueBytes { break }
            cut.append(character)
        }
        return cut + "…[\(value.utf8.count) bytes, cut]"
    }
}

extension AuditLog.State {
    /// Counts a repeat of `key` when its window is open; false when the record opens a new window.
    fileprivate mutating func countRepeat(of key: AuditLog.Key, at now: ContinuousClock.Instant) -> Bool {
        // One hash of the key per table, and the entry counted in place (not copied out with its logger and
        // metadata): this runs for every audited request.
        if let index = self.current.index(forKey: key) {
            return Self.countIfOpen(&self.current.values[index], at: now)
        }
        if let index = self.previous.index(forKey: key) {
            return Self.countIfOpen(&self.previous.values[index], at: now)
        }
        return false
    }

    private static func countIfOpen(_ entry: inout AuditLog.Entry, at now: ContinuousClock.Instant) -> Bool {
        guard now < entry.windowEnd else { return false }
        entry.repeated += 1
        return true
    }

    /// Opens a window for `key`: the entry of its ended window (if any) and, when the table is full, its older half
    /// are retired, to be written by `flush`.
    fileprivate mutating func open(
        _ key: AuditLog.Key,
        at now: ContinuousClock.Instant,
        window: Duration,
        maximumTracked: Int,
        entry: (UInt64) -> AuditLog.Entry
    ) {
        if let ended = self.current.removeValue(forKey: key) ?? self.previous.removeValue(forKey: key) {
            self.retire(ended)
        }
        if self.current.count >= maximumTracked / 2 {
            for ended in self.previous.values { self.retire(ended) }
            self.previous = self.current
            self.current = [:]
        }
        self.sequence += 1
        let opened = entry(self.sequence)
        self.current[key] = opened
        self.unwritten.append(key)
        if self.unwritten.count > 2 * maximumTracked {
            // Nobody flushed for a long time (no `run()`, as in tests of the dispatcher alone): keep only the keys
            // whose first record is still pending, at most the table's size.
            var seen: Set<AuditLog.Key> = []
            self.unwritten = self.unwritten.filter {
                (self.current[$0]?.firstPending == true || self.previous[$0]?.firstPending == true)
                    && seen.insert($0).inserted
            }
        }
        self.earliestWindowEnd = min(self.earliestWindowEnd ?? opened.windowEnd, opened.windowEnd)
    }

    private mutating func retire(_ entry: AuditLog.Entry) {
        if entry.firstPending || entry.repeated > 0 { self.retired.append(entry) }
    }

    /// Removes the entries whose window has ended (all with `all`) and returns them.
    fileprivate mutating func removeEnded(at now: ContinuousClock.Instant, all: Bool) -> [AuditLog.Entry] {
        var ended: [AuditLog.Entry] = []
        var earliest: ContinuousClock.Instant? = nil
        for table in [\Self.current, \Self.previous] {
            for (key, entry) in self[keyPath: table] {
                if all || now >= entry.windowEnd {
                    self[keyPath: table].removeValue(forKey: key)
                    ended.append(entry)
                } else {
                    earliest = min(earliest ?? entry.windowEnd, entry.windowEnd)
                }
            }
        }
        self.earliestWindowEnd = earliest
        return ended
    }
}

extension AuditLog: Service {
    /// Writes first records as they come (woken by `record`), summaries as their windows end (checked every quarter
    /// window), and everything pending at shutdown.
    package func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { [wakeUp = self.wakeUp, window = self.window] in
                while (try? await Task.sleep(for: window / 4)) != nil { wakeUp.yield() }
            }
            for await _ in self.wakes.cancelOnGracefulShutdown() { self.flush() }
            group.cancelAll()
        }
        self.flush(all: true)
    }
}

extension Dispatcher {
    /// One audit record for a call (see `AuditLog`). A call whose connection had closed by then (it was carried out
    /// all the same, and its answer dropped: `ClientPresence`) says so with `client_gone=true`.
    func audit(
        _ action: String,
        userID: String?,
        outcome: String,
        permission: Permission? = nil,
        error: ResponseError? = nil,
        tokenExpiresAt: Timestamp? = nil,
        details: Logger.Metadata = [:],
        _ context: Context
    ) {
        var details = details
        if context.presence.isGone { details["client_gone"] = "true" }
        self.auditLog.record(
            action: action,
            userID: userID,
            outcome: outcome,
            permission: permission,
            error: error,
            peer: context.peer,
            executable: context.executable,
            logger: context.logger,
            tokenExpiresAt: tokenExpiresAt,
            details: details
        )
    }
}
