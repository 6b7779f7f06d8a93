import UsherProtocol

extension MethodHandler {
    /// `update_profile`: sets a local account's name, picture or locale. The `manage` permission: it changes the
    /// account for every later login, as `register` and `change_password` change accounts.
    static let updateProfile = MethodHandler(
        UpdateProfileRequest.self,
        permission: .manage,
        reach: .seats,
        audited: true
    ) { request, call in
        let result = try await call.registry.updateProfile(
            userID: request.userID,
            seat: call.requestedSeat(request.seat),
            changes: request.changes,
            scope: call.scope
        )
        return .result(result, call, userID: result.user.id)
    }
}
