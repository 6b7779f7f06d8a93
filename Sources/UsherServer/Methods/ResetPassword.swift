import UsherProtocol

extension MethodHandler {
    /// `reset_password`: an administrator sets a new password for an email/password account, without the current
    /// one; every session of the account on the device ends. It logs users out wherever they are active, so no
    /// seat-scoped rule grants it; it asks for no proof, so only root and usherd's own uid may (`administrator`). Its
    /// failures count against the peer uid in the login throttle, so that it is no unthrottled check of which emails
    /// have accounts, even for them.
    static let resetPassword = MethodHandler(
        ResetPasswordRequest.self,
        permission: .manage,
        reach: .device,
        audited: true,
        owner: .administrator
    ) { request, call in
        let result = try await call.dispatcher.throttle.peerAttempt(peer: call.context.peer.uid) {
            try await call.registry.resetPassword(
                provider: request.provider,
                email: request.email,
                newPassword: request.newPassword
            )
        }
        return .result(result, call)
    }
}
