import Testing
import UsherCore

/// Single flights, without the actor: waiters are plain numbers.
struct FlightsTests {
    @Test func theFirstCallerStartsTheWorkAndTheOthersWaitForItsOutcome() {
        var flights = Flights<String, Int>()
        #expect(flights.isUnderWay("alice") == false)
        #expect(flights.start("alice") == true)
        #expect(flights.isUnderWay("alice") == true)
        #expect(flights.start("alice") == false)
        flights.wait("alice", 1)
        #expect(flights.start("alice") == false)
        flights.wait("alice", 2)
        #expect(flights.land("alice") == [1, 2])
        #expect(flights.isUnderWay("alice") == false)
        // Landed: the next caller starts new work.
        #expect(flights.start("alice") == true)
        #expect(flights.land("alice").isEmpty)
    }

    @Test func flightsOfDifferentKeysAreIndependent() {
        var flights = Flights<String, Int>()
        #expect(flights.start("alice") == true)
        #expect(flights.start("bob") == true)
        flights.wait("bob", 7)
        #expect(flights.land("alice").isEmpty)
        #expect(flights.isUnderWay("bob") == true)
        #expect(flights.land("bob") == [7])
    }

    @Test func landingWorkThatIsNotUnderWayHandsOutNobody() {
        var flights = Flights<String, Int>()
        #expect(flights.land("alice").isEmpty)
        #expect(flights.isUnderWay("alice") == false)
    }

    @Test func aWaiterIsNeverDropped() {
        // Added with no work under way (which the registry never does), it is handed out when the next work lands.
        var flights = Flights<String, Int>()
        flights.wait("alice", 3)
        #expect(flights.isUnderWay("alice") == true)
        #expect(flights.land("alice") == [3])
    }
}
