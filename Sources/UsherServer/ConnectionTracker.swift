import NIOCore
import Synchronization

/// The live connections: admission against `[limits]`, the count for `status`, and closing them at shutdown; and the
/// requests that outlive their connection.
///
/// Admission and release happen under one lock, so the limits hold exactly however many connections arrive at once.
///
/// A connection's task for requests that need the registry goes on after the connection closes, until every request
/// read in full is carried out (`RequestHandler`, `ClientPresence`). Until it ends, the connection still counts towards
/// its uid's `max_connections_per_uid` (though no longer towards `status`'s count), so a peer cannot pile up work by
/// closing connections with requests in them; and a stopping server waits for it (`allClosed`).
package final class ConnectionTracker: Sendable {
    /// Whether a new connection may be served, and if not, what to tell it.
    enum Admission: Equatable {
        case admitted
        case refused(String)
    }

    private struct Entry {
        var channel: any Channel
        var connectionID: UInt64
        var uid: UInt32
        var privileged: Bool
    }

    /// A connection's request task (`RequestHandler`).
    private struct Work {
        var task: Task<Void, Never>
        var uid: UInt32
        var privileged: Bool
        /// Its connection has closed: the uid's slot is given back when the task ends.
        var holdsSlot = false
    }

    private struct State {
        var connections: [ObjectIdentifier: Entry] = [:]
        /// Request tasks by connection id, until they end.
        var work: [UInt64: Work] = [:]
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
    func admit(
        _ channel: any Channel,
        connectionID: UInt64,
        uid: UInt32,
        privileged: Bool,
        limits: ServerLimits
    ) -> Admission {
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
            state.connections[ObjectIdentifier(channel)] = Entry(
                channel: channel,
                connectionID: connectionID,
                uid: uid,
                privileged: privileged
            )
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

    /// Releases an admitted connection. Its uid's slot stays taken while its request task goes on.
    func remove(_ channel: any Channel) {
        let waiters = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if let entry = state.connections.removeValue(forKey: ObjectIdentifier(channel)), !entry.privileged {
                if state.work[entry.connectionID] != nil {
                    state.work[entry.connectionID]!.holdsSlot = true
                } else {
                    Self.releaseSlot(of: entry.uid, in: &state)
                }
            }
            return Self.emptyWaiters(&state)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// A connection started its request task (on its event loop, before the task can end).
    func workStarted(_ task: Task<Void, Never>, connectionID: UInt64, uid: UInt32, privileged: Bool) {
        self.state.withLock { state in
            state.work[connectionID] = Work(task: task, uid: uid, privileged: privileged)
        }
    }

    /// A connection's request task ended: every request it had read is carried out.
    func workEnded(connectionID: UInt64) {
        let waiters = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if let work = state.work.removeValue(forKey: connectionID), work.holdsSlot, !work.privileged {
                Self.releaseSlot(of: work.uid, in: &state)
            }
            return Self.emptyWaiters(&state)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Cancels the request tasks still running (a stopping daemon whose grace is over): what they have not committed
    /// does not happen.
    func cancelWork() {
        for task in self.state.withLock({ $0.work.values.map(\.task) }) { task.cancel() }
    }

    private static func releaseSlot(of uid: UInt32, in state: inout State) {
        let remaining = state.perUID[uid, default: 1] - 1
        state.perUID[uid] = remaining > 0 ? remaining : nil
    }

    /// The waiters of `allClosed` to resume, when nothing is left.
    private static func emptyWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        guard state.connections.isEmpty, state.work.isEmpty else { return [] }
        defer { state.emptyWaiters = [] }
        return state.emptyWaiters
    }

    /// Returns once no connection is open and every request read is carried out.
    func allClosed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = self.state.withLock { state -> Bool in
                guard state.connections.isEmpty, state.work.isEmpty else {
                    state.emptyWaiters.append(continuation)
                    return false
                }
                return true
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
