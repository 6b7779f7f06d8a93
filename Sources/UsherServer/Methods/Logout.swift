import UsherProtocol

extension MethodHandler {
    /// `logout`: ends a user's session (the seat's active user by default); the user stays on the device.
    static let logout = MethodHandler(LogoutRequest.self, permission: .manage, reach: .seats, audited: true) {
        request,
        call in
        let result = try await call.registry.logout(
            userID: request.userID,
            seat: call.requestedSeat(request.seat),
            force: request.force == true,
            scope: call.scope
        )
        return .result(result, call, userID: result.user.id, forced: request.force == true)
    }
}
