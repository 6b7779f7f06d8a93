import UsherProtocol

extension MethodHandler {
    /// `unlink_identity`: removes one identity from a user. About the user wherever it is active, so, like
    /// `remove_user`, about the whole device: no seat-scoped rule grants it. The user must be the peer's
    /// (`OwnerRule.user`).
    static let unlinkIdentity = MethodHandler(
        UnlinkIdentityRequest.self,
        permission: .manage,
        reach: .device,
        audited: true,
        owner: .user
    ) { request, call in
        let result = try await call.registry.unlinkIdentity(
            userID: request.userID,
            provider: request.provider,
            subject: request.subject,
            ownership: call.ownership,
            force: request.force == true
        )
        return .result(
            result,
            call,
            userID: request.userID,
            forced: request.force == true
        )
    }
}
