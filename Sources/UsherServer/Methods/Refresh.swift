import UsherProtocol

extension MethodHandler {
    /// `refresh`: refreshes the user's tokens now.
    static let refresh = MethodHandler(RefreshRequest.self, permission: .token, reach: .seats, audited: true) {
        request,
        call in
        let result = try await call.registry.refresh(
            userID: request.userID,
            seat: call.requestedSeat(request.seat),
            scope: call.scope
        )
        return .result(result, call, userID: result.userID)
    }
}
