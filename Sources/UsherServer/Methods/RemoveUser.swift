import UsherProtocol

extension MethodHandler {
    /// `remove_user`: forgets a user entirely.
    static let removeUser = MethodHandler(RemoveUserRequest.self, permission: .manage, reach: .device, audited: true) {
        request,
        call in
        let result = try await call.registry.removeUser(request.userID, force: request.force == true)
        return .result(RemoveUserRequest.Result(result), call, userID: request.userID, forced: request.force == true)
    }
}
