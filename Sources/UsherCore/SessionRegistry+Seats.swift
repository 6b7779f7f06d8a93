import UsherProtocol

/// Seats: which exist, which one a request is about, and the gates that keep each seat's changes in order.
extension SessionRegistry {
    /// At load: each seat's active user as last committed. A database from before seats has none recorded; its
    /// default seat gets the most recently active logged-in user, which is who was active before.
    func restoreSeats(_ persisted: [String: String?]?) {
        for seat in self.seatConfiguration.configuredSeats {
            self.seatDirectory[seat] = SessionView.SeatEntry(source: .config, present: true)
        }
        self.view.publish(seatDirectory: self.seatDirectory, namesSeats: self.seatConfiguration.namesSeats)
        guard let persisted else {
            let active = self.state.successor()
            self.state.seats.set(active, on: self.state.defaultSeat)
            self.unrecordedSeats[self.state.defaultSeat] = .some(active)
            return
        }
        var vacant: [String] = []
        for (seat, userID) in persisted.sorted(by: { $0.key < $1.key }) {
            if let userID, self.state[userID]?.state == .loggedIn, self.state.seats.seat(of: userID) == nil {
                self.state.seats.set(userID, on: seat)
            } else if userID != nil {
                vacant.append(seat)
            }
        }
        // Only a database edited by hand gets here: the successor rule fills the seats whose user is gone.
        for seat in vacant { self.state.seats.set(self.state.successor(), on: seat) }
    }

    /// The seat a change is about: the one named, else the default. A named seat must be known.
    func seat(named requested: String?) throws(SessionError) -> String {
        guard let requested else { return self.state.defaultSeat }
        guard self.seatDirectory[requested] != nil || self.state.seats.user(on: requested) != nil else {
            throw .seatNotFound(requested)
        }
        return requested
    }

    /// Every seat, for `list_seats`.
    package func listSeats() -> SeatList { self.view.listSeats() }

    /// A seat logind reported (at start, or while running): it is known from now on, and present.
    package func seatAppeared(_ name: String) {
        // A seat logind knows is logind's, declared or not; one that comes back keeps its state.
        let previous = self.seatDirectory[name]
        guard previous?.source != .logind || previous?.present != true else { return }
        self.seatDirectory[name] = SessionView.SeatEntry(source: .logind, present: true)
        self.view.publish(seatDirectory: self.seatDirectory, namesSeats: self.seatConfiguration.namesSeats)
        guard previous?.present != true else { return }
        self.events.publish([Event(generation: self.view.generation, seat: name, .seatAdded(source: "logind"))])
    }

    /// A logind seat went away: it keeps its state (its active user comes back with it), and is not present.
    package func seatDisappeared(_ name: String) {
        guard let entry = self.seatDirectory[name], entry.source == .logind, entry.present else { return }
        if self.seatConfiguration.configuredSeats.contains(name) {
            // Declared in the configuration (or the default seat): it stays, as a seat of the configuration's.
            self.seatDirectory[name] = SessionView.SeatEntry(source: .config, present: true)
            self.view.publish(seatDirectory: self.seatDirectory, namesSeats: self.seatConfiguration.namesSeats)
            return
        }
        self.seatDirectory[name] = SessionView.SeatEntry(source: .logind, present: false)
        self.view.publish(seatDirectory: self.seatDirectory, namesSeats: self.seatConfiguration.namesSeats)
        self.events.publish([Event(generation: self.view.generation, seat: name, .seatRemoved)])
    }

    /// Takes the gates of `seats` in name order (so two changes that both span two seats cannot wait on each other).
    func enterGates(_ seats: [String]) async {
        for seat in seats {
            if self.seatGates.enter(seat) { continue }
            // Suspension: the change ahead of this one on the seat finishes first, and hands the gate over.
            await withCheckedContinuation { self.seatGates.wait(seat, $0) }
        }
    }

    func leaveGates(_ seats: [String]) {
        // A seat whose queue empties forgets its delays: the next change asked for gives its holders a new one.
        for seat in seats.reversed() { self.seatGates.leave(seat)?.resume() }
    }
}
