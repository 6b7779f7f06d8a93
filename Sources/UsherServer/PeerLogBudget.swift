import Logging
import ServiceLifecycle
import Synchronization

/// Bounds how many log records one peer uid can make the daemon write per second, whatever their kind.
///
/// Why: coalescing (`AuditLog`) folds repeats of one record, but a peer can make every record differ (a new lease id
/// per `inhibit`, a new `user_id` per denied request, a new pid per process) or trigger records that are no audit
/// records at all (a subscriber that stopped reading, a request that failed unexpectedly). A local user looping such
/// requests must not be able to fill the disk or drown other users' records. So every record a connection's logger
/// writes (audit records and their `repeated=N` summaries included) is counted against its peer's uid: in each
/// second (a window that opens with the uid's first record in it) the first `limit` records are written and the
/// rest are counted; the uid's next record after the window ends is preceded by one `log records suppressed` record
/// saying how many were (`suppressed=N`), and `run()` writes that summary for a uid that went quiet. So a uid makes the
/// daemon write at most `limit + 1` records a second, and other uids' records are never held back. Root and the
/// daemon's own uid are not counted (`SocketServer` gives their connections a plain logger): they are trusted, and a
/// login screen running as root relays every user's logins, whose audit records must not be the ones left out.
///
/// Every check is O(1) under one lock, except that a new uid arriving when `maximumTracked` are counted first sweeps
/// out the windows that have ended.
/// Memory is bounded: `run()` forgets every window that has ended each second (writing its count first), and past
/// `maximumTracked` uids so does the next new uid's record; only uids that logged within the last second are kept,
/// and there are no more of those than local users connected.
package final class PeerLogBudget: Sendable {
    fileprivate struct Window {
        var start: ContinuousClock.Instant
        var written = 0
        var suppressed = 0
    }

    fileprivate struct State {
        var windows: [UInt32: Window] = [:]
    }

    /// One second: the bound is per second.
    static let window: Duration = .seconds(1)

    private let limit: @Sendable () -> Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let maximumTracked: Int
    /// Where summaries of uids that went quiet are written (`run()`, `flush()`).
    private let logger: Logger
    private let state = Mutex(State())

    /// - Parameters:
    ///   - limit: records one uid may cause per second (`[limits] max_log_records_per_second`), read at every record
    ///     so that a configuration reload applies at once.
    ///   - logger: where summaries for uids that went quiet go.
    ///   - now: the monotonic time (tests pass a clock they move by hand).
    package init(
        limit: @escaping @Sendable () -> Int,
        logger: Logger,
        maximumTracked: Int = 4096,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.limit = limit
        self.logger = logger
        self.maximumTracked = max(1, maximumTracked)
        self.now = now
    }

    /// What to do with one record of `uid`'s.
    struct Verdict {
        var write: Bool
        /// Records suppressed in the uid's window that just ended: write a summary first.
        var suppressedBefore: Int
    }

    /// Counts one record of `uid`'s.
    func admit(_ uid: UInt32) -> Verdict {
        let now = self.now()
        let limit = max(1, self.limit())
        let (verdict, dropped): (Verdict, [(UInt32, Int)]) = self.state.withLock { state in
            var dropped: [(UInt32, Int)] = []
            var window = state.windows[uid] ?? Window(start: now)
            var suppressedBefore = 0
            if now - window.start >= Self.window {
                suppressedBefore = window.suppressed
                window = Window(start: now)
            } else if state.windows[uid] == nil, state.windows.count >= self.maximumTracked {
                dropped = state.removeEnded(at: now)
            }
            let write = window.written < limit
            if write { window.written += 1 } else { window.suppressed += 1 }
            state.windows[uid] = window
            return (Verdict(write: write, suppressedBefore: suppressedBefore), dropped)
        }
        self.writeSummaries(dropped)
        return verdict
    }

    /// Writes the summaries of the windows that have ended, and forgets them. `run()` calls it every second; tests
    /// call it after moving their clock.
    package func flush() {
        let now = self.now()
        self.writeSummaries(self.state.withLock { $0.removeEnded(at: now) })
    }

    /// How many uids are counted now.
    package var trackedCount: Int { self.state.withLock { $0.windows.count } }

    private func writeSummaries(_ summaries: [(UInt32, Int)]) {
        for (uid, suppressed) in summaries where suppressed > 0 {
            self.logger.notice("log records suppressed", metadata: Self.summary(uid: uid, suppressed: suppressed))
        }
    }

    static func summary(uid: UInt32, suppressed: Int) -> Logger.Metadata {
        ["peer.uid": "\(uid)", "suppressed": "\(suppressed)", "limit": "max_log_records_per_second"]
    }

    /// `logger` (a connection's), with every record it writes counted against `uid`.
    package func logger(_ logger: Logger, uid: UInt32) -> Logger {
        var counted = logger
        counted.handler = Handler(upstream: logger.handler, uid: uid, budget: self)
        return counted
    }

    /// Passes a record on when the budget allows it, preceded by the summary of the uid's last window.
    private struct Handler: LogHandler {
        var upstream: any LogHandler
        let uid: UInt32
        let budget: PeerLogBudget

        var metadata: Logger.Metadata {
            get { self.upstream.metadata }
            set { self.upstream.metadata = newValue }
        }

        var metadataProvider: Logger.MetadataProvider? {
            get { self.upstream.metadataProvider }
            set { self.upstream.metadataProvider = newValue }
        }

        var logLevel: Logger.Level {
            get { self.upstream.logLevel }
            set { self.upstream.logLevel = newValue }
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { self.upstream[metadataKey: key] }
            set { self.upstream[metadataKey: key] = newValue }
        }

        func log(event: LogEvent) {
            let verdict = self.budget.admit(self.uid)
            if verdict.suppressedBefore > 0 {
                var summary = event
                summary.level = .notice
                summary.message = "log records suppressed"
                summary.error = nil
                summary.metadata = PeerLogBudget.summary(uid: self.uid, suppressed: verdict.suppressedBefore)
                self.upstream.log(event: summary)
            }
            if verdict.write { self.upstream.log(event: event) }
        }
    }
}

extension PeerLogBudget.State {
    /// Removes the windows that have ended; returns their suppressed counts.
    fileprivate mutating func removeEnded(at now: ContinuousClock.Instant) -> [(UInt32, Int)] {
        var ended: [(UInt32, Int)] = []
        for (uid, window) in self.windows where now - window.start >= PeerLogBudget.window {
            self.windows.removeValue(forKey: uid)
            ended.append((uid, window.suppressed))
        }
        return ended
    }
}

extension PeerLogBudget: Service {
    /// Writes, every second, the summaries of uids whose window ended with nothing after it.
    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while (try? await Task.sleep(for: Self.window)) != nil { self.flush() }
        }
        self.flush()
    }
}
