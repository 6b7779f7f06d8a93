import UsherProtocol

extension MethodHandler {
    /// `refresh_profile`: refreshes the user's tokens and reads its claims again. The `token` permission, as `refresh`:
    /// it renews the session a program with that permission may already refresh, and reads nothing it could not.
    static let refreshProfile = MethodHandler(
        RefreshProfileRequest.self,
        permission: .token,
        reach: .seats,
        audited: true
    ) { request, call in
        let result = try await call.registry.refreshProfile(
            userID: request.userID,
            seat: call.requestedSeat(request.seat),
            scope: call.scope
        )
        return .result(result, call, userID: result.user.id)
    }
}
