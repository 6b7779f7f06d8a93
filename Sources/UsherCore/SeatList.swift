/// Every seat the daemon knows at a generation (`list_seats`), by name.
package struct SeatList: Sendable, Hashable {
    /// A seat: where it comes from, whether it is there now, and its active user.
    package struct Seat: Sendable, Hashable {
        package var name: String
        package var source: SeatConfiguration.Source
        /// A logind seat that went away keeps its state and is not present.
        package var present: Bool
        package var userID: String?

        package init(name: String, source: SeatConfiguration.Source, present: Bool, userID: String?) {
            self.name = name
            self.source = source
            self.present = present
            self.userID = userID
        }
    }

    package var generation: Int64
    /// The seat of a request that names none and whose caller has none.
    package var defaultSeat: String
    package var seats: [Seat]

    package init(generation: Int64, defaultSeat: String, seats: [Seat]) {
        self.generation = generation
        self.defaultSeat = defaultSeat
        self.seats = seats
    }
}
