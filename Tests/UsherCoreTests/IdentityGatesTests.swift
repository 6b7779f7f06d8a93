import Testing
import UsherCore
import UsherProtocol

/// The identities' gates and epoch, without the actor.
struct IdentityGatesTests {
    static let alice = Identity(provider: "corp", kind: "authorization_code", subject: "alice")

    @Test func loginsOfOneAccountGoOneAfterTheOtherWhateverTheyWereProvenWith() {
        var gates = IdentityGates<Int>()
        #expect(gates.enter(Self.alice) == true)
        // The same account proven another way: the same gate.
        let again = Identity(provider: "corp", kind: "device_code", subject: "alice")
        #expect(gates.enter(again) == false)
        gates.wait(again, 1)
        #expect(gates.enter(Identity(provider: "corp", kind: "authorization_code", subject: "bob")) == true)
        #expect(gates.enter(Identity(provider: "other", kind: "authorization_code", subject: "alice")) == true)
        #expect(gates.leave(Self.alice) == 1)
        #expect(gates.leave(again) == nil)
        #expect(gates.enter(Self.alice) == true)
    }

    @Test func providerAndSubjectCannotBeConfusedByWhereTheySplit() {
        var gates = IdentityGates<Int>()
        #expect(gates.enter(Identity(provider: "ab", kind: "k", subject: "c")) == true)
        #expect(gates.enter(Identity(provider: "a", kind: "k", subject: "bc")) == true)
    }

    @Test func anOwnerResolvedBeforeAnIdentityWasTakenIsStale() {
        var gates = IdentityGates<Int>()
        let epoch = gates.epoch
        #expect(gates.isCurrent(epoch) == true)
        gates.identitiesTaken()
        #expect(gates.isCurrent(epoch) == false)
        #expect(gates.isCurrent(gates.epoch) == true)
    }
}
