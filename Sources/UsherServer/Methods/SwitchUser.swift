import UsherProtocol

extension MethodHandler {
    /// `switch_user`: makes a logged-in user active on the seat.
    static let switchUser = MethodHandler(SwitchUserRequest.self, permission: .manage, reach: .seats, audited: true) {
        request,
        call in
        let result = try await call.registry.switchUser(
            to: request.userID,
            ifGeneration: request.ifGeneration,
            seat: call.requestedSeat(request.seat),
            move: request.move == true,
            force: request.force == true,
            scope: call.scope
        )
        return .result(result, call, userID: result.user.id, forced: request.force == true)
    }
}
