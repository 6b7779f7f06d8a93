import Testing

@testable import UsherServer

/// The connection lifecycle on its own, without a channel: lines as strings, a streamed answer as an array of pieces.
struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine<String, [String]>

    static func answered(_ received: Machine.Received) -> String? {
        if case .answer(let line) = received { line } else { nil }
    }

    static func isQueued(_ received: Machine.Received) -> Bool {
        if case .queued = received { true } else { false }
    }

    static func isIgnored(_ received: Machine.Received) -> Bool {
        if case .ignored = received { true } else { false }
    }

    @Test func aLineIsAnsweredAtOnceWhileNothingElseIsUnderWay() {
        var machine = Machine(maximumQueued: 4)
        #expect(Self.answered(machine.received("a", callOpen: false)) == "a")
        #expect(machine.queued.isEmpty)
    }

    @Test func linesWaitWhileARequestIsWithTheRegistryAndAreAnsweredInOrderAfterIt() {
        var machine = Machine(maximumQueued: 4)
        _ = machine.received("a", callOpen: false)
        machine.requestPending()
        #expect(Self.isQueued(machine.received("b", callOpen: false)))
        #expect(Self.isQueued(machine.received("c", callOpen: false)))
        #expect(machine.nextQueued(callOpen: false) == nil)
        #expect(machine.registryFinished() == true)
        #expect(machine.nextQueued(callOpen: false) == "b")
        #expect(machine.nextQueued(callOpen: false) == "c")
        #expect(machine.nextQueued(callOpen: false) == nil)
    }

    @Test func aLineQueuedBehindOthersWaitsEvenWhenTheConnectionIsFree() {
        var machine = Machine(maximumQueued: 4)
        machine.requestPending()
        _ = machine.received("a", callOpen: false)
        machine.requestPending()
        _ = machine.received("b", callOpen: false)
        _ = machine.registryFinished()
        // "a" and "b" wait: a new line goes behind them, not before.
        #expect(Self.isQueued(machine.received("c", callOpen: false)))
        #expect(machine.queued.count == 3)
    }

    @Test func anOpenVarlinkCallHoldsTheNextLine() {
        var machine = Machine(maximumQueued: 4)
        #expect(Self.isQueued(machine.received("a", callOpen: true)))
        #expect(machine.nextQueued(callOpen: true) == nil)
        #expect(machine.scheduleDrain(callOpen: true) == false)
        #expect(machine.nextQueued(callOpen: false) == "a")
    }

    @Test func aStreamedAnswerHoldsEventsUntilItIsWrittenInFull() {
        var machine = Machine(maximumQueued: 4)
        _ = machine.received("list", callOpen: false)
        machine.requestPending()
        #expect(machine.registryFinished() == true)
        #expect(machine.startStreaming(["p1", "p2"]) == true)
        #expect(machine.event([1]) == .held)
        let taken = machine.takeStream()
        #expect(taken == ["p1", "p2"])
        // Being written: a nested writability change finds nothing to write, and events still wait.
        #expect(machine.takeStream() == nil)
        #expect(machine.event([2]) == .held)
        machine.streamPaused(["p2"])
        #expect(Self.isQueued(machine.received("next", callOpen: false)))
        let rest = machine.takeStream()
        #expect(rest == ["p2"])
        #expect(machine.streamWritten() == [[1], [2]])
        #expect(machine.event([3]) == .write)
        #expect(machine.nextQueued(callOpen: false) == "next")
    }

    @Test func aSubscribedConnectionDoesNotStreamItsAnswers() {
        var machine = Machine(maximumQueued: 4)
        machine.subscribed(7)
        #expect(machine.startStreaming(["p1"]) == false)
        #expect(machine.takeStream() == nil)
        #expect(machine.unsubscribe() == 7)
        #expect(machine.startStreaming(["p1"]) == true)
    }

    @Test func readingPausesWhileTooManyLinesWaitAndResumesAtHalf() {
        var machine = Machine(maximumQueued: 4)
        machine.requestPending()
        for line in ["a", "b", "c", "d"] { _ = machine.received(line, callOpen: false) }
        #expect(machine.read() == false)
        #expect(machine.resumeReading() == false)
        _ = machine.registryFinished()
        _ = machine.nextQueued(callOpen: false)
        _ = machine.nextQueued(callOpen: false)
        // Two of four left: not under half yet.
        #expect(machine.resumeReading() == false)
        _ = machine.nextQueued(callOpen: false)
        #expect(machine.resumeReading() == true)
        #expect(machine.resumeReading() == false)
        #expect(machine.read() == true)
    }

    @Test func aDrainIsScheduledOnceWhileLinesWait() {
        var machine = Machine(maximumQueued: 8)
        machine.requestPending()
        _ = machine.received("a", callOpen: false)
        #expect(machine.scheduleDrain(callOpen: false) == false)
        _ = machine.registryFinished()
        #expect(machine.scheduleDrain(callOpen: false) == true)
        #expect(machine.scheduleDrain(callOpen: false) == false)
        machine.drainRan()
        #expect(machine.scheduleDrain(callOpen: false) == true)
    }

    @Test func afterTheEndOfInputTheConnectionClosesOnceEverythingIsAnswered() {
        var machine = Machine(maximumQueued: 4)
        machine.requestPending()
        _ = machine.received("a", callOpen: false)
        machine.inputClosed()
        #expect(machine.closeIfDone() == .init(unsubscribed: nil, close: false))
        _ = machine.registryFinished()
        #expect(machine.closeIfDone() == .init(unsubscribed: nil, close: false))
        #expect(machine.nextQueued(callOpen: false) == "a")
        #expect(machine.closeIfDone() == .init(unsubscribed: nil, close: true))
        // Closing: nothing more is answered, no event written, and it closes once only.
        #expect(Self.isIgnored(machine.received("b", callOpen: false)))
        #expect(machine.event([1]) == .dropped)
        #expect(machine.closeIfDone() == .init(unsubscribed: nil, close: false))
    }

    @Test func theSubscriptionEndsWithTheInputAndTheConnectionClosesAfterItsForwarder() {
        var machine = Machine(maximumQueued: 4)
        machine.subscribed(3)
        machine.inputClosed()
        #expect(machine.closeIfDone() == .init(unsubscribed: 3, close: false))
        #expect(machine.closeIfDone() == .init(unsubscribed: nil, close: false))
        machine.forwardingEnded()
        #expect(machine.closeIfDone() == .init(unsubscribed: nil, close: true))
    }

    @Test func aLineTooLongClosesTheConnectionAndDropsWhatWaits() {
        var machine = Machine(maximumQueued: 4)
        _ = machine.received("a", callOpen: true)
        machine.lineTooLong()
        #expect(machine.queued.isEmpty)
        #expect(machine.acceptsEvents == false)
        #expect(machine.end()?.isEmpty == true)
    }

    @Test func theLinesReadInFullGoToTheTaskWhenTheConnectionEndsOnce() {
        var machine = Machine(maximumQueued: 4)
        machine.requestPending()
        _ = machine.received("a", callOpen: false)
        _ = machine.received("b", callOpen: false)
        #expect(machine.end().map(Array.init) == ["a", "b"])
        #expect(machine.end() == nil)
        #expect(machine.isEnded)
        // The request that was with the registry finishes after the end: its answer goes nowhere.
        #expect(machine.registryFinished() == false)
        #expect(Self.isIgnored(machine.received("c", callOpen: false)))
        #expect(machine.event([1]) == .dropped)
    }

    // MARK: - Events that cannot happen in a state change nothing

    @Test func anAnswerNobodyWaitsForIsDropped() {
        var machine = Machine(maximumQueued: 4)
        #expect(machine.registryFinished() == false)
        #expect(machine.mayAnswer(callOpen: false) == true)
    }

    @Test func aStreamCannotStartWhileARequestIsWithTheRegistry() {
        var machine = Machine(maximumQueued: 4)
        machine.requestPending()
        #expect(machine.startStreaming(["p"]) == false)
        #expect(machine.takeStream() == nil)
        #expect(machine.streamWritten().isEmpty)
        machine.streamPaused(["p"])
        #expect(machine.takeStream() == nil)
        // Still with the registry.
        #expect(machine.registryFinished() == true)
    }

    @Test func aSecondPendingRequestDoesNotHideTheFirst() {
        var machine = Machine(maximumQueued: 4)
        #expect(machine.startStreaming(["p"]) == true)
        machine.requestPending()
        // The stream is still there to write.
        #expect(machine.takeStream() == ["p"])
    }

    @Test func inputClosedTwiceOrAfterTheEndChangesNothing() {
        var machine = Machine(maximumQueued: 4)
        machine.inputClosed()
        machine.inputClosed()
        #expect(machine.read() == true)
        _ = machine.end()
        machine.inputClosed()
        #expect(machine.isEnded)
        #expect(machine.closeIfDone() == .init(unsubscribed: nil, close: false))
    }

    @Test func forwardersNeverGoNegative() {
        var machine = Machine(maximumQueued: 4)
        machine.forwardingEnded()
        #expect(machine.forwarders == 0)
        #expect(machine.unsubscribe() == nil)
    }
}
