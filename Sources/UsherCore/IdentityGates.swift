import UsherProtocol

/// Who may resolve an identity's owner now (`SessionRegistry+Identities`): one gate per identity a login or link is
/// resolving and committing, so that two of them with one identity go one after the other, and an epoch that moves
/// whenever a committed change takes an identity from its owner (unlink, deletion, an anonymous user's end).
///
/// Identities gain owners only through the gate; they lose them by changes that move the epoch, so a change that
/// resolved an owner at one epoch and commits at another looks the owner up again.
///
/// Generic over the waiter so that it is tested without the actor (the registry's is a `CheckedContinuation`).
package struct IdentityGates<Waiter> {
    private var gates = GateTable<String, Waiter>()
    /// Moves whenever a committed change takes an identity from its owner.
    package private(set) var epoch: UInt64 = 0

    package init() {}

    /// The gate's key: provider and subject, which together name an identity.
    private static func key(_ identity: Identity) -> String { identity.provider + "\u{0}" + identity.subject }

    /// Takes `identity`'s gate if it is free: true. False: the caller waits (`wait`) to be handed it.
    package mutating func enter(_ identity: Identity) -> Bool { self.gates.enter(Self.key(identity)) }

    package mutating func wait(_ identity: Identity, _ waiter: Waiter) { self.gates.wait(Self.key(identity), waiter) }

    /// Releases `identity`'s gate: the next login or link in line, or nil when none waits.
    package mutating func leave(_ identity: Identity) -> Waiter? { self.gates.leave(Self.key(identity)) }

    /// A committed change took identities from their owners: owners resolved before it are stale.
    package mutating func identitiesTaken() { self.epoch &+= 1 }

    /// Whether an owner resolved at `epoch` is still current.
    package func isCurrent(_ epoch: UInt64) -> Bool { self.epoch == epoch }
}
