import NIOCore
import Synchronization

/// `[limits]`: what one connection, one peer uid, and all of them together may cost.
package struct ServerLimits: Sendable, Hashable {
    /// The longest request line, not counting its terminator.
    package var maximumLineBytes = 65_536
    /// The deepest nesting of arrays and objects in a request.
    package var maximumJSONDepth = 64
    /// The most members (keys of one object, elements of one array) any container in a request may hold. Checked
    /// while the line is scanned, before anything is decoded.
    package var maximumJSONMembers = 512
    /// Connections beyond this many get `too_many_connections` and are closed; root and the daemon's own uid may
    /// open `reservedConnections` more.
    package var maximumConnections = 1024
    /// Connections one peer uid may hold at once (root and the daemon's own uid are exempt).
    package var maximumConnectionsPerUID = 64
    /// Connections beyond `maximumConnections` that only root and the daemon's own uid may use, so that other users
    /// filling the server can never lock out the administrator.
    package var reservedConnections = 16
    /// A connection that is not subscribed, has no request in progress and has sent no complete request for this long
    /// is closed. Bytes that do not complete a request do not count.
    package var idleTimeout: TimeAmount = .minutes(5)
    /// Output a connection may leave unsent (a subscriber that stops reading) before it is disconnected.
    package var maximumPendingBytes = 1_048_576
    /// Log records one peer uid may cause per second, of every kind (`PeerLogBudget`).
    package var maximumLogRecordsPerSecond = 20
    /// The largest executable hashed for rules with `executable_sha256`; a larger one has no digest, and such rules do
    /// not match it (`ExecutableDigests`).
    package var maximumHashedExecutableBytes = ExecutableDigests.defaultMaximumBytes

    package init() {}
}

/// The server settings that a configuration reload may change while the daemon runs.
///
/// Every request reads the current access policy (so a reload applies to connections opened before it); a
/// connection keeps the line limit and idle timeout it started with. Reads take a lock only long enough to copy the
/// value (the policy is a small immutable snapshot), so they never wait behind anything slow.
package final class ServerSettings: Sendable {
    private struct State {
        var limits: ServerLimits
        var policy: AccessPolicy
        var observers: [UInt64: @Sendable () -> Void] = [:]
        var nextObserver: UInt64 = 0
    }

    private let state: Mutex<State>
    /// Whether some rule in force narrows tokens (`AccessPolicy.narrowsTokens`): read by every `access_token`, with
    /// no lock.
    private let narrowing: Atomic<Bool>
    /// The seat of a newly accepted peer (logind's, with `[seats] source = "logind"`), asked once per connection;
    /// nil: the default seat.
    package let seatOfPeer: @Sendable (PeerCredentials) -> String?
    /// Digests of peers' executables, for rules with `executable_sha256`.
    package let digests: ExecutableDigests

    package init(
        limits: ServerLimits,
        policy: AccessPolicy,
        seatOfPeer: @escaping @Sendable (PeerCredentials) -> String? = { _ in nil }
    ) {
        self.state = Mutex(State(limits: limits, policy: policy))
        self.narrowing = Atomic(policy.narrowsTokens)
        self.seatOfPeer = seatOfPeer
        self.digests = ExecutableDigests(
            demand: DigestDemand(policy),
            maximumBytes: limits.maximumHashedExecutableBytes
        )
    }

    /// Whether some rule in force narrows tokens.
    package var narrowsTokens: Bool { self.narrowing.load(ordering: .acquiring) }

    package var limits: ServerLimits {
        get { self.state.withLock { $0.limits } }
        set {
            self.state.withLock { $0.limits = newValue }
            self.digests.maximumBytes = newValue.maximumHashedExecutableBytes
        }
    }

    /// The access policy in force. Setting it tells every policy observer, after the new policy is in place.
    /// Connections that are already open get no digest of their executable for a new `executable_sha256` rule this
    /// way: a reload uses `install(_:)`.
    package var policy: AccessPolicy {
        get { self.state.withLock { $0.policy } }
        set {
            self.digests.demand = DigestDemand(newValue)
            let observers = self.state.withLock { state in
                state.policy = newValue
                return Array(state.observers.values)
            }
            self.narrowing.store(newValue.narrowsTokens, ordering: .releasing)
            for observer in observers { observer() }
        }
    }

    /// Puts `policy` in force once the connections that are open are ready for it: when it has `executable_sha256`
    /// rules, the executables of the peers they are about are hashed first (off the event loop), so the rules apply
    /// to them at once.
    package func install(_ policy: AccessPolicy) async {
        // Until the new policy is in force the old one is, and its rules' peers are still hashed meanwhile.
        await self.digests.prepare(DigestDemand(policy).union(self.digests.demand))
        self.policy = policy
    }

    /// Calls `observer` after every change of the policy (it reads `policy` itself, so it always sees the newest).
    /// Returns a token for `removePolicyObserver`.
    package func observePolicy(_ observer: @escaping @Sendable () -> Void) -> UInt64 {
        self.state.withLock { state in
            state.nextObserver += 1
            state.observers[state.nextObserver] = observer
            return state.nextObserver
        }
    }

    package func removePolicyObserver(_ token: UInt64) {
        _ = self.state.withLock { $0.observers.removeValue(forKey: token) }
    }
}
