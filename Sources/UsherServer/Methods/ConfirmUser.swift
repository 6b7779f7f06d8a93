import UsherProtocol

extension MethodHandler {
    /// `confirm_user`: confirms an account with the token the confirmation hook delivered. Needs what `register`
    /// needs; a refused token counts as a failed login of the peer.
    static let confirmUser = MethodHandler(
        ConfirmUserRequest.self,
        permission: .manage,
        reach: .nothing,
        audited: true
    ) { request, call in
        let result = try await call.dispatcher.throttle.peerAttempt(peer: call.context.peer.uid) {
            try await call.registry.confirmUser(provider: request.provider, token: request.token)
        }
        return .result(result, call)
    }
}
