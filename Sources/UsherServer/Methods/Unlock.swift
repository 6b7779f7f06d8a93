import UsherProtocol

extension MethodHandler {
    /// `unlock`: unlocks the seat with its active user's PIN, checked by usherd alone (no provider is asked). Throttled
    /// as a login of that user: a wrong PIN counts as a failed login.
    static let unlock = MethodHandler(UnlockRequest.self, permission: .manage, reach: .seats, audited: true) {
        request,
        call in
        let seat = call.requestedSeat(request.seat)
        let view = call.registry.view
        // The account whose failed logins a wrong PIN adds to: the seat's active user as the request finds it.
        let account = view.activeUser(on: seat).map { view.info($0)?.email ?? $0 }
        let state = try await call.dispatcher.throttle.unlock(account: account, peer: call.context.peer.uid) {
            try await call.registry.unlock(seat: seat, pin: request.pin, scope: call.scope)
        }
        return .result(SeatLockResult(state), call, userID: view.activeUser(on: state.seat))
    }
}
