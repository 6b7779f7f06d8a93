import UsherProtocol

extension MethodHandler {
    /// `lock_seat`: locks the seat as usherd; its active user's tokens are refused until `unlock`.
    static let lockSeat = MethodHandler(LockSeatRequest.self, permission: .manage, reach: .seats, audited: true) {
        request,
        call in
        let state = try await call.registry.lockSeat(seat: call.requestedSeat(request.seat), scope: call.scope)
        return .result(SeatLockResult(state), call)
    }
}
