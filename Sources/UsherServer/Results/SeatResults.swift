import UsherCore
import UsherProtocol

// The protocol's results for seats and leases: one initializer per core value, the only place each is mapped.

extension ListSeatsRequest.Result {
    init(_ list: SeatList) {
        self.init(
            generation: list.generation,
            defaultSeat: list.defaultSeat,
            seats: list.seats.map {
                SeatInfo(name: $0.name, source: $0.source.rawValue, present: $0.present, userID: $0.userID)
            }
        )
    }
}

extension InhibitRequest.Result {
    init(_ lease: TakenLease) {
        self.init(lease: lease.lease, seat: lease.seat)
    }
}

extension SeatLockResult {
    init(_ state: SeatLockState) {
        self.init(seat: state.seat, locked: state.lockedBy != nil, by: state.lockedBy?.rawValue)
    }
}
