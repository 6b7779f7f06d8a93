import Logging
import ServiceLifecycle
import Synchronization
import UsherProtocol

/// The audit trail: one structured record per audited call and per refused request (action, user, peer, outcome;
/// never a token).
///
/// Refusals are what an attacker can produce in bulk (a peer without permission looping a request, a guesser
/// hammering a throttled login), so they are coalesced: the first `denied` or `rate_limited` of a (peer uid, peer
/// pid, action, outcome) is written at once, repeats within `window` only increment a counter, and when the window
/// ends one summary line says how many there were (`repeated=N`). A flood costs one counter increment per request
/// and two lines per window, not a line per request. Summaries are written by `run()` (a service of the daemon),
/// off the request path; the state is bounded (`maximumTracked` keys, and a full table writes out and drops its older
/// half first), so nothing is lost and nothing grows without bound.
///
/// Values that come from the request (the user id) are cut to `maximumValueBytes`; the log handler escapes every
/// control character in every field.
package final class AuditLog: Sendable {
    private struct Key: Hashable {
        var uid: UInt32
        var pid: Int32
        var action: String
        var outcome: String
    }

    private struct Pending {
        var windowEnd: ContinuousClock.Instant
        var repeated = 0
        /// The metadata of the first record, repeated in the summary.
        var metadata: Logger.Metadata
    }

    private struct State {
        var current: [Key: Pending] = [:]
        var previous: [Key: Pending] = [:]
    }

    /// The outcomes that are coalesced.
    static let coalescedOutcomes: Set<String> = ["denied", ErrorCode.rateLimited.rawValue]
    /// Request values (user ids) longer than this are cut.
    package static let maximumValueBytes = 256

    private let logger: Logger
    private let window: Duration
    private let maximumTracked: Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(State())

    /// - Parameters:
    ///   - logger: where summaries go (first records go to the connection's logger, with its metadata).
    ///   - window: how long repeats are counted before a summary is written.
    ///   - maximumTracked: how many (peer, action, outcome) keys are counted at once.
    ///   - now: the monotonic time (tests pass a clock they move by hand).
    package init(
        logger: Logger,
        window: Duration = .seconds(60),
        maximumTracked: Int = 4096,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.logger = logger
        self.window = window
        self.maximumTracked = max(2, maximumTracked)
        self.now = now
    }

    /// Records one audited call or refused request.
    package func record(
        action: String,
        userID: String?,
        outcome: String,
        permission: Permission? = nil,
        error: ResponseError? = nil,
        peer: PeerCredentials,
        executable: String?,
        logger: Logger
    ) {
        var metadata: Logger.Metadata = [
            "action": "\(action)", "outcome": "\(outcome)", "peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)",
        ]
        if let userID { metadata["user.id"] = "\(Self.bounded(userID))" }
        if let executable { metadata["peer.exe"] = "\(executable)" }
        if let permission { metadata["permission"] = "\(permission.rawValue)" }
        if let retryAfter = error?.retryAfter { metadata["retry_after"] = "\(retryAfter)" }
        let level: Logger.Level = outcome == "denied" ? .notice : .info
        guard Self.coalescedOutcomes.contains(outcome) else {
            logger.log(level: level, "audit", metadata: metadata)
            return
        }
        let key = Key(uid: peer.uid, pid: peer.pid, action: action, outcome: outcome)
        let now = self.now()
        let (first, evicted) = self.state.withLock { state -> (Bool, [Pending]) in
            if var pending = state.current[key] ?? state.previous[key], now < pending.windowEnd {
                pending.repeated += 1
                if state.current[key] != nil { state.current[key] = pending } else { state.previous[key] = pending }
                return (false, [])
            }
            var evicted: [Pending] = []
            if let ended = state.current.removeValue(forKey: key) ?? state.previous.removeValue(forKey: key),
                ended.repeated > 0
            {
                evicted.append(ended)
            }
            if state.current.count >= self.maximumTracked / 2 {
                evicted += state.previous.values.filter { $0.repeated > 0 }
                state.previous = state.current
                state.current = [:]
            }
            state.current[key] = Pending(windowEnd: now + self.window, metadata: metadata)
            return (true, evicted)
        }
        for pending in evicted { self.summarize(pending) }
        if first { logger.log(level: level, "audit", metadata: metadata) }
    }

    /// Writes the summaries of the windows that have ended (all of them with `all`), and forgets those keys.
    package func flush(all: Bool = false) {
        let now = self.now()
        let ended: [Pending] = self.state.withLock { state in
            var ended: [Pending] = []
            for table in [\State.current, \State.previous] {
                let done = state[keyPath: table].filter { all || now >= $0.value.windowEnd }
                for (key, pending) in done {
                    state[keyPath: table].removeValue(forKey: key)
                    if pending.repeated > 0 { ended.append(pending) }
                }
            }
            return ended
        }
        for pending in ended { self.summarize(pending) }
    }

    /// How many keys are being counted now.
    package var trackedCount: Int { self.state.withLock { $0.current.count + $0.previous.count } }

    private func summarize(_ pending: Pending) {
        var metadata = pending.metadata
        metadata["repeated"] = "\(pending.repeated)"
        self.logger.log(level: metadata["outcome"] == "denied" ? .notice : .info, "audit", metadata: metadata)
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

extension AuditLog: Service {
    /// Writes summaries as their windows end, and every pending one at shutdown.
    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.window / 4)
                self.flush()
            }
        }
        self.flush(all: true)
    }
}

extension Dispatcher {
    /// One audit record for a call (see `AuditLog`).
    func audit(
        _ action: String,
        userID: String?,
        outcome: String,
        permission: Permission? = nil,
        error: ResponseError? = nil,
        _ context: Context
    ) {
        self.auditLog.record(
            action: action,
            userID: userID,
            outcome: outcome,
            permission: permission,
            error: error,
            peer: context.peer,
            executable: context.executable,
            logger: context.logger
        )
    }
}
