import Synchronization
import UsherProtocol

/// The leases held now: in memory only (a lease dies with its connection, and with the daemon), behind one lock so
/// that a connection that closes releases its leases from its event loop without a hop to the registry.
///
/// Each lease carries the way to tell its holder something (`switch_pending`, `lease_broken`): a line written to the
/// connection that took it, whether or not that connection subscribed to events.
package final class LeaseBook: Sendable {
    /// Who takes a lease: the connection, and the peer behind it.
    package struct Holder: Sendable {
        /// Unique per connection for the daemon's life.
        package var connectionID: UInt64
        package var pid: Int32
        package var uid: UInt32
        package var executable: String?
        /// Tells the holder's connection an event (the server writes it in the connection's wire format).
        package var notify: @Sendable (Event) -> Void

        package init(
            connectionID: UInt64,
            pid: Int32,
            uid: UInt32,
            executable: String?,
            notify: @escaping @Sendable (Event) -> Void
        ) {
            self.connectionID = connectionID
            self.pid = pid
            self.uid = uid
            self.executable = executable
            self.notify = notify
        }
    }

    private struct Lease {
        var info: LeaseInfo
        var holder: Holder
    }

    private struct State {
        var leases: [String: Lease] = [:]
        var nextNumber: UInt64 = 0
        /// Changes waiting for a seat's delay leases: resumed when one of the seat's leases goes.
        var waiters: [String: [UInt64: CheckedContinuation<Void, Never>]] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// Takes a lease; throws `tooManyLeases` when the uid holds `maximumPerUID` already.
    package func take(
        seat: String,
        mode: LeaseMode,
        who: String,
        why: String,
        holder: Holder,
        since: Timestamp,
        maximumPerUID: Int
    ) throws(SessionError) -> LeaseInfo {
        let taken: LeaseInfo? = self.state.withLock { state in
            let held = state.leases.values.lazy.filter { $0.holder.uid == holder.uid }.count
            guard held < maximumPerUID else { return nil }
            state.nextNumber += 1
            // Not a secret: a lease id only works on the connection that took it.
            let id = "l_\(state.nextNumber)"
            let info = LeaseInfo(
                lease: id,
                seat: seat,
                mode: mode,
                who: who,
                why: why,
                pid: Int64(holder.pid),
                uid: Int64(holder.uid),
                executable: holder.executable,
                since: since
            )
            state.leases[id] = Lease(info: info, holder: holder)
            return info
        }
        guard let taken else { throw .tooManyLeases(limit: maximumPerUID) }
        return taken
    }

    /// Releases a lease the connection holds; returns it, nil when it holds no such lease.
    package func release(_ id: String, connectionID: UInt64) -> LeaseInfo? {
        let (released, wake) = self.state.withLock { state -> (LeaseInfo?, [CheckedContinuation<Void, Never>]) in
            guard let lease = state.leases[id], lease.holder.connectionID == connectionID else { return (nil, []) }
            state.leases[id] = nil
            return (lease.info, Self.wakeWaiters(lease.info.seat, in: &state))
        }
        for waiter in wake { waiter.resume() }
        return released
    }

    /// Releases every lease of a connection that closed; returns them.
    @discardableResult
    package func releaseAll(connectionID: UInt64) -> [LeaseInfo] {
        let (released, wake) = self.state.withLock { state -> ([LeaseInfo], [CheckedContinuation<Void, Never>]) in
            let ids = state.leases.filter { $0.value.holder.connectionID == connectionID }.map(\.key)
            guard !ids.isEmpty else { return ([], []) }
            var released: [LeaseInfo] = []
            for id in ids { released.append(state.leases.removeValue(forKey: id)!.info) }
            var wake: [CheckedContinuation<Void, Never>] = []
            for seat in Set(released.map(\.seat)) { wake += Self.wakeWaiters(seat, in: &state) }
            return (released, wake)
        }
        for waiter in wake { waiter.resume() }
        return released
    }

    /// Ends every lease (the daemon is stopping); changes waiting for delay leases go on.
    package func releaseEverything() {
        let wake = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.leases.removeAll()
            defer { state.waiters.removeAll() }
            return state.waiters.values.flatMap(\.values)
        }
        for waiter in wake { waiter.resume() }
    }

    /// Every lease, oldest first.
    package func all() -> [LeaseInfo] {
        self.state.withLock { state in
            state.leases.values.map(\.info).sorted {
                ($0.since, $0.lease.count, $0.lease) < ($1.since, $1.lease.count, $1.lease)
            }
        }
    }

    /// The leases on a seat, of one mode or all.
    package func leases(on seat: String, mode: LeaseMode? = nil) -> [LeaseInfo] {
        self.all().filter { $0.seat == seat && (mode == nil || $0.mode == mode) }
    }

    /// Whether a connection holds a lease.
    package func holdsAny(connectionID: UInt64) -> Bool {
        self.state.withLock { state in
            !state.leases.isEmpty && state.leases.values.contains { $0.holder.connectionID == connectionID }
        }
    }

    /// Whether any lease is held on the seat (cheap: the common case is none at all).
    package func isHeld(on seat: String) -> Bool {
        self.state.withLock { state in !state.leases.isEmpty && state.leases.values.contains { $0.info.seat == seat } }
    }

    /// Tells the holders of the leases on a seat (of one mode, or all) an event: `event` says which, for each lease
    /// (nil: not this one).
    package func notify(seat: String, mode: LeaseMode? = nil, _ event: (LeaseInfo) -> Event?) {
        let holders = self.state.withLock { state in
            state.leases.values.filter { $0.info.seat == seat && (mode == nil || $0.info.mode == mode) }
        }
        for lease in holders {
            if let event = event(lease.info) { lease.holder.notify(event) }
        }
    }

    /// Waits until a delay lease on the seat is released. Returns at once when the seat holds none; a cancelled wait
    /// returns too.
    package func waitForDelayRelease(on seat: String) async {
        let id = self.state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let clear = self.state.withLock { state -> Bool in
                    if Task.isCancelled || !Self.holdsDelay(seat, in: state) { return true }
                    state.waiters[seat, default: [:]][id] = continuation
                    return false
                }
                if clear { continuation.resume() }
            }
        } onCancel: {
            self.state.withLock { $0.waiters[seat]?.removeValue(forKey: id) }?.resume()
        }
    }

    private static func holdsDelay(_ seat: String, in state: State) -> Bool {
        state.leases.values.contains { $0.info.seat == seat && $0.info.mode == .delay }
    }

    /// The changes waiting on a seat whose lease was just released: they look at the seat's delay leases again.
    private static func wakeWaiters(_ seat: String, in state: inout State) -> [CheckedContinuation<Void, Never>] {
        guard let waiters = state.waiters.removeValue(forKey: seat) else { return [] }
        return Array(waiters.values)
    }
}

/// A lease just taken (`inhibit`): its id, for `release`, and its seat.
package struct TakenLease: Sendable, Hashable {
    package var lease: String
    package var seat: String

    package init(lease: String, seat: String) {
        self.lease = lease
        self.seat = seat
    }
}
