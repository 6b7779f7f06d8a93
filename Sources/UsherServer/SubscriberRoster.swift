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
    func add(subscriptionID: UInt64, peer: PeerCredentials) -> Membership {
        let membership = Membership(subscriptionID: subscriptionID)
        self.members.withLock { $0[subscriptionID] = Member(peer: peer, membership: membership) }
        if !self.settings.policy.permissions(for: peer).contains(.read) {
            self.revoke(subscriptionID)
        }
        return membership
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
            members.filter { !policy.permissions(for: $0.value.peer).contains(.read) }.map(\.key)
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
