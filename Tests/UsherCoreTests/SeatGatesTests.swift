import Testing
import UsherCore
import UsherProtocol

/// The seats' queues of changes and the delays of their delay leases, without the actor.
struct SeatGatesTests {
    static let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)

    @Test func changesOfASeatGoOneAfterTheOther() {
        var gates = SeatGates<Int>()
        #expect(gates.isGated("seat0") == false)
        #expect(gates.enter("seat0") == true)
        #expect(gates.isGated("seat0") == true)
        #expect(gates.enter("seat0") == false)
        gates.wait("seat0", 1)
        #expect(gates.enter("seat1") == true)
        #expect(gates.leave("seat0") == 1)
        #expect(gates.isGated("seat0") == true)
        #expect(gates.leave("seat0") == nil)
        #expect(gates.isGated("seat0") == false)
        #expect(gates.isGated("seat1") == true)
    }

    @Test func eachDelayLeaseIsGivenItsDeadlineOnceAndTheLatestHoldsTheChangesBack() {
        var gates = SeatGates<Int>()
        let first = gates.delayDeadline(
            on: "seat0",
            delaying: ["l1"],
            now: Self.now,
            maximumDelayMilliseconds: 5000
        )
        #expect(first.deadline == Self.now.adding(milliseconds: 5000))
        #expect(first.newcomers == ["l1"])
        // Later, a second lease: it gets its own delay; the first keeps the one it was given.
        let later = Self.now.adding(milliseconds: 2000)
        let second = gates.delayDeadline(
            on: "seat0",
            delaying: ["l1", "l2"],
            now: later,
            maximumDelayMilliseconds: 5000
        )
        #expect(second.newcomers == ["l2"])
        #expect(second.deadline == later.adding(milliseconds: 5000))
        #expect(gates.delays(on: "seat0") == ["l1": Self.now.adding(milliseconds: 5000), "l2": second.deadline!])
    }

    @Test func theDeadlinesOfLeasesThatAreGoneAreForgotten() {
        var gates = SeatGates<Int>()
        _ = gates.delayDeadline(on: "seat0", delaying: ["l1", "l2"], now: Self.now, maximumDelayMilliseconds: 5000)
        let after = gates.delayDeadline(
            on: "seat0",
            delaying: ["l2"],
            now: Self.now.adding(milliseconds: 100),
            maximumDelayMilliseconds: 5000
        )
        #expect(after.newcomers.isEmpty)
        #expect(gates.delays(on: "seat0") == ["l2": Self.now.adding(milliseconds: 5000)])
    }

    @Test func noDelayLeaseHoldsNothingBack() {
        var gates = SeatGates<Int>()
        let none = gates.delayDeadline(on: "seat0", delaying: [], now: Self.now, maximumDelayMilliseconds: 5000)
        #expect(none.deadline == nil)
        #expect(none.newcomers.isEmpty)
        #expect(gates.delays(on: "seat0") == nil)
    }

    @Test func whenTheSeatsQueueEmptiesTheNextChangeGivesTheHoldersANewDelay() {
        var gates = SeatGates<Int>()
        #expect(gates.enter("seat0") == true)
        _ = gates.delayDeadline(on: "seat0", delaying: ["l1"], now: Self.now, maximumDelayMilliseconds: 5000)
        gates.wait("seat0", 1)
        // A change still waits: the delay given stays.
        #expect(gates.leave("seat0") == 1)
        #expect(gates.delays(on: "seat0") != nil)
        #expect(gates.leave("seat0") == nil)
        #expect(gates.delays(on: "seat0") == nil)
        let later = Self.now.adding(milliseconds: 60_000)
        let next = gates.delayDeadline(on: "seat0", delaying: ["l1"], now: later, maximumDelayMilliseconds: 5000)
        #expect(next.newcomers == ["l1"])
        #expect(next.deadline == later.adding(milliseconds: 5000))
    }
}
