import UsherProtocol

extension MethodHandler {
    /// `close_session`: ends a binding `open_session` made, doing `on_close` (keep, logout, remove) to its user. The
    /// binding must be the peer's: opened by its uid (`OwnerRule.user`).
    static let closeSession = MethodHandler(
        CloseSessionRequest.self,
        permission: .manage,
        reach: .device,
        audited: true,
        owner: .user
    ) { request, call in
        let (binding, generation) = try await call.registry.closeSession(
            request.binding,
            onClose: request.action,
            ownership: call.ownership
        )
        let result = CloseSessionRequest.Result(
            binding: binding.id,
            userID: binding.userID,
            onClose: request.action,
            generation: generation
        )
        return .result(result, call, userID: binding.userID)
            .auditing(["binding.id": "\(binding.id)", "on_close": "\(request.action.rawValue)"])
    }
}
