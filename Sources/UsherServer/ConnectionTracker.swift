import NIOCore
import Synchronization

/// The live connections: admission against `[limits]`, the count for `status`, and closing them at shutdown.
///
/// Admission and release happen under one lock, so the limits hold exactly however many connections arrive at once.
package final class ConnectionTracker: Sendable {
    /// Whether a new connection may be served, and if not, what to tell it.
    enum Admission: Equatable {
        case admitted
        case refused(String)
    }

    private struct Entry {
        var channel: any Channel
        var uid: UInt32
        var privileged: Bool
    }

    private struct State {
        var connections: [ObjectIdentifier: Entry] = [:]
        /// Connections per uid, for the uids other than root and the daemon's own.
        var perUID: [UInt32: Int] = [:]
        /// Per uid: when a refusal was last logged, and how many were refused since without a log line.
        var refusals: [UInt32: (loggedAt: NIODeadline, unlogged: Int)] = [:]
        var emptyWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// At most one log line per uid in this interval about refused connections, however fast it opens them.
    static let refusalLogInterval: TimeAmount = .seconds(10)

    private let state = Mutex(State())
    private let answered = Atomic<Int>(0)
    private let answerObserver: (@Sendable (_ uid: UInt32, _ answeredSoFar: Int) -> Void)?

    /// `answerObserver` is told of every answer the moment it is handed to the writer: whose it was, and
    /// `requestsAnswered` counting it. (Tests measure fairness with it; the daemon passes none.)
    package init(answerObserver: (@Sendable (_ uid: UInt32, _ answeredSoFar: Int) -> Void)? = nil) {
        self.answerObserver = answerObserver
    }

    package var count: Int { self.state.withLock { $0.connections.count } }

    /// Requests answered since the server started, on all connections together (what fairness is measured in).
    package var requestsAnswered: Int { self.answered.load(ordering: .relaxed) }

    func requestAnswered(to uid: UInt32) {
        let count = self.answered.add(1, ordering: .relaxed).newValue
        self.answerObserver?(uid, count)
    }

    /// Admits a connection unless a limit says no.
    ///
    /// Everyone shares `maximumConnections`; each uid may hold at most `maximumConnectionsPerUID` of them; root and
    /// the daemon's own uid (`privileged`) are exempt from the per-uid limit and may use `reservedConnections` more
    /// than the shared limit, so a crowd of other users can never lock the administrator out.
    func admit(_ channel: any Channel, uid: UInt32, privileged: Bool, limits: ServerLimits) -> Admission {
        self.state.withLock { state in
            let total = state.connections.count
            if privileged {
                let ceiling = limits.maximumConnections + limits.reservedConnections
                guard total < ceiling else {
                    return .refused("usherd serves \(ceiling) connections at most")
                }
            } else {
                guard total < limits.maximumConnections else {
                    return .refused("usherd serves \(limits.maximumConnections) connections at most")
                }
                let mine = state.perUID[uid, default: 0]
                guard mine < limits.maximumConnectionsPerUID else {
                    return .refused(
                        "uid \(uid) already has \(mine) connections, the most one uid may have "
                            + "(limits.max_connections_per_uid)"
                    )
                }
                state.perUID[uid] = mine + 1
            }
            state.connections[ObjectIdentifier(channel)] = Entry(channel: channel, uid: uid, privileged: privileged)
            return .admitted
        }
    }

    /// Whether to log a refusal of `uid`'s connection now; if so, also how many earlier ones went unlogged. A peer
    /// that opens connections as fast as it can must not be able to flood the log with one line for each.
    package func shouldLogRefusal(of uid: UInt32, now: NIODeadline = .now()) -> (log: Bool, unlogged: Int) {
        self.state.withLock { state in
            guard var entry = state.refusals[uid], now - entry.loggedAt < Self.refusalLogInterval else {
                let unlogged = state.refusals[uid]?.unlogged ?? 0
                if state.refusals.count > 10_000 { state.refusals.removeAll() }
                state.refusals[uid] = (now, 0)
                return (true, unlogged)
            }
            entry.unlogged += 1
            state.refusals[uid] = entry
            return (false, 0)
        }
    }

    /// Releases an admitted connection.
    func remove(_ channel: any Channel) {
        let waiters = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if let entry = state.connections.removeValue(forKey: ObjectIdentifier(channel)), !entry.privileged {
                let remaining = state.perUID[entry.uid, default: 1] - 1
                state.perUID[entry.uid] = remaining > 0 ? remaining : nil
            }
            guard state.connections.isEmpty else { return [] }
            defer { state.emptyWaiters = [] }
            return state.emptyWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once no connection is open.
    func allClosed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = self.state.withLock { state -> Bool in
                guard !state.connections.isEmpty else { return true }
                state.emptyWaiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Stops reading on every connection: each finishes the request in hand, answers it, and closes. A connection
    /// whose peer does not take its answer within `grace` is closed anyway, so a stuck reader cannot hold up a
    /// shutdown.
    func closeInputs(grace: TimeAmount) {
        for channel in self.state.withLock({ $0.connections.values.map(\.channel) }) {
            channel.close(mode: .input, promise: nil)
            channel.eventLoop.scheduleTask(in: grace) { channel.close(promise: nil) }
        }
    }
}
