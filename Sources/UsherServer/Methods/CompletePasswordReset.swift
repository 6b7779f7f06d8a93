import UsherProtocol

extension MethodHandler {
    /// `complete_password_reset`: a new password, given the token the reset hook delivered; every session of the
    /// account on the device ends. Needs what `register` needs: the token proves the mailbox, not a session. A refused
    /// token counts as a failed login of the peer.
    static let completePasswordReset = MethodHandler(
        CompletePasswordResetRequest.self,
        permission: .manage,
        reach: .nothing,
        audited: true
    ) { request, call in
        let result = try await call.dispatcher.throttle.peerAttempt(peer: call.context.peer.uid) {
            try await call.registry.completePasswordReset(
                provider: request.provider,
                token: request.token,
                newPassword: request.newPassword
            )
        }
        return .result(result, call)
    }
}
