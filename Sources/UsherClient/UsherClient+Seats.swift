/// The seat and lease methods (docs/seats-and-leases.md).
extension UsherClient {
    /// Every seat, with its active user.
    public func listSeats() async throws -> ListSeatsRequest.Result {
        try await self.send(ListSeatsRequest())
    }

    /// Takes a lease on a seat (nil: the caller's, else the default one): the seat's active user is not changed
    /// under this connection (`block`) or not without warning and a wait (`delay`) until `release` or until this
    /// client disconnects. `switch_pending` and `lease_broken` arrive in `events`, subscribed or not.
    public func inhibit(
        seat: String? = nil,
        mode: LeaseMode,
        who: String,
        why: String
    ) async throws -> HeldLease {
        let answer = try await self.send(InhibitRequest(seat: seat, mode: mode, who: who, why: why))
        // The first reply of `inhibit` names the lease; the interface's result also describes the events that follow
        // it on a streaming call, so both are optional there.
        guard let lease = answer.lease, let seat = answer.seat else {
            throw UsherClientError.malformedResponse("the answer to inhibit named no lease")
        }
        return HeldLease(lease: lease, seat: seat)
    }

    /// A lease this connection holds: its id (for `release`) and its seat.
    public struct HeldLease: Sendable, Hashable {
        public var lease: String
        public var seat: String
    }

    /// Releases a lease this connection took.
    public func release(lease: String) async throws -> ReleaseRequest.Result {
        try await self.send(ReleaseRequest(lease: lease))
    }

    /// Every lease held now.
    public func listLeases() async throws -> ListLeasesRequest.Result {
        try await self.send(ListLeasesRequest())
    }

    /// Locks the seat (nil: the caller's, else the default one): its active user's tokens are refused with
    /// `seat_locked` until `unlock`.
    public func lockSeat(_ seat: String? = nil) async throws -> SeatLockResult {
        try await self.send(LockSeatRequest(seat: seat))
    }

    /// Unlocks the seat with its active user's PIN (checked by usherd alone: no network needed).
    public func unlock(seat: String? = nil, pin: String) async throws -> SeatLockResult {
        try await self.send(UnlockRequest(seat: seat, pin: pin))
    }

    /// Sets the PIN of the user (nil: the active user of the caller's seat).
    public func setPIN(_ pin: String, userID: String? = nil) async throws -> SetPINRequest.Result {
        try await self.send(SetPINRequest(userID: userID, pin: pin))
    }
}
