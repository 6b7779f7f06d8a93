import Testing
import UsherCore

/// One first-in, first-out gate per key, without the actor: waiters are plain numbers.
struct GateTableTests {
    @Test func aFreeGateIsTakenAtOnceAndFreedWhenNobodyWaits() {
        var gates = GateTable<String, Int>()
        #expect(gates.enter("a") == true)
        #expect(gates.isHeld("a") == true)
        #expect(gates.leave("a") == nil)
        #expect(gates.isHeld("a") == false)
        #expect(gates.heldCount == 0)
        #expect(gates.enter("a") == true)
    }

    @Test func aHeldGateIsHandedToItsWaitersInTheOrderTheyCame() {
        var gates = GateTable<String, Int>()
        #expect(gates.enter("a") == true)
        #expect(gates.enter("a") == false)
        gates.wait("a", 1)
        #expect(gates.enter("a") == false)
        gates.wait("a", 2)
        // Handed over, not freed: a newcomer still waits.
        #expect(gates.leave("a") == 1)
        #expect(gates.enter("a") == false)
        #expect(gates.leave("a") == 2)
        #expect(gates.isHeld("a") == true)
        #expect(gates.leave("a") == nil)
        #expect(gates.isHeld("a") == false)
    }

    @Test func gatesOfDifferentKeysAreIndependent() {
        var gates = GateTable<String, Int>()
        #expect(gates.enter("a") == true)
        #expect(gates.enter("b") == true)
        #expect(gates.heldCount == 2)
        #expect(gates.leave("a") == nil)
        #expect(gates.isHeld("b") == true)
    }

    @Test func leavingAGateNobodyHoldsChangesNothing() {
        var gates = GateTable<String, Int>()
        #expect(gates.leave("a") == nil)
        #expect(gates.heldCount == 0)
        #expect(gates.enter("a") == true)
    }
}
