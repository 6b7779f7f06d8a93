import Synchronization
import UsherCore

/// The connections that are subscribed, with their peers' credentials, so that a policy change (a reload) ends the
/// subscriptions it no longer allows instead of letting them receive events the peer may no longer read.
final class SubscriberRoster: Sendable {
    /// One subscription's standing: set once the policy took away its `read` permission.
    final class Membership: Sendable {
        let subscriptionID: UInt64
        private let revokedFlag = Atomic<Bool>(false)

        init(subscriptionID: UInt64) {
            self.subscriptionID = subscriptionID
        }

        var isRevoked: Bool { self.revokedFlag.load(ordering: .acquiring) }

        /// Marks it revoked; returns false when it already was.
        func revoke() -> Bool {
            !self.revokedFlag.exchange(true, ordering: .acquiringAndReleasing)
        }
    }

    private struct Member {
        var peer: PeerCredentials
        /// The seats the subscription is limited to (nil: every seat).
        var seats: Set<String>?
        var membership: Membership
    }

    private let members = Mutex<[UInt64: Member]>([:])
    private let events: EventHub
    private let settings: ServerSettings

    init(events: EventHub, settings: ServerSettings) {
        self.events = events
        self.settings = settings
    }

    /// Registers a subscription. Checks the policy after registering, so a reload that ran while the `subscribe`
    /// request was being answered cannot be missed: either it sees this member, or this check sees its policy.
    func add(subscriptionID: UInt64, peer: PeerCredentials, seats: Set<String>?) -> Membership {
        let membership = Membership(subscriptionID: subscriptionID)
        self.members.withLock { $0[subscriptionID] = Member(peer: peer, seats: seats, membership: membership) }
        if !Self.mayRead(self.settings.policy, peer, seats) {
            self.revoke(subscriptionID)
        }
        return membership
    }

    /// Whether the policy lets the peer read the events of `seats` (nil: of every seat, and about users).
    private static func mayRead(_ policy: AccessPolicy, _ peer: PeerCredentials, _ seats: Set<String>?) -> Bool {
        guard let scope = policy.scope(of: .read, for: peer) else { return false }
        guard let seats else { return scope == .everywhere }
        return scope.covers(seats)
    }

    /// Ends a subscription (the connection closed, or subscribed again).
    func remove(_ subscriptionID: UInt64) {
        _ = self.members.withLock { $0.removeValue(forKey: subscriptionID) }
        self.events.cancel(subscriptionID)
    }

    /// Ends every subscription whose peer the current policy no longer allows to `read`. Their event streams finish;
    /// each connection then tells its peer why and closes.
    func revokeUnauthorized() {
        let policy = self.settings.policy
        let revoked = self.members.withLock { members in
            members.filter { !Self.mayRead(policy, $0.value.peer, $0.value.seats) }.map(\.key)
        }
        for id in revoked { self.revoke(id) }
    }

    private func revoke(_ subscriptionID: UInt64) {
        guard let member = self.members.withLock({ $0.removeValue(forKey: subscriptionID) }),
            member.membership.revoke()
        else { return }
        self.events.cancel(subscriptionID)
    }
}
