import UsherProtocol

extension MethodHandler {
    /// `delete_user`: deletes the user's account at its providers and removes it from the device. It needs `manage`
    /// on the whole device (no seat-scoped rule grants it); besides, only root and usherd's own uid delete any user's
    /// account, and any other peer only the account of a user whose session its own uid opened.
    static let deleteUser = MethodHandler(DeleteUserRequest.self, permission: .manage, reach: .device, audited: true) {
        request,
        call in
        let peer = call.context.peer
        let privileged = call.dispatcher.settings.policy.isPrivileged(peer)
        let result = try await call.registry.deleteUser(
            request.userID,
            right: privileged ? .anyUser : .sessionsOf(uid: peer.uid),
            force: request.force
        )
        return .result(DeleteUserRequest.Result(result), call, userID: request.userID, forced: request.force)
    }
}
