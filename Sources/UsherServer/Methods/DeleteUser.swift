import UsherProtocol

extension MethodHandler {
    /// `delete_user`: deletes the user's account at its providers and removes it from the device. It needs `manage`
    /// on the whole device (no seat-scoped rule grants it), and the user must be the peer's (`OwnerRule.user`).
    static let deleteUser = MethodHandler(
        DeleteUserRequest.self,
        permission: .manage,
        reach: .device,
        audited: true,
        owner: .user
    ) { request, call in
        let result = try await call.registry.deleteUser(
            request.userID,
            ownership: call.ownership,
            force: request.force == true
        )
        return .result(result, call, userID: request.userID, forced: request.force == true)
    }
}
