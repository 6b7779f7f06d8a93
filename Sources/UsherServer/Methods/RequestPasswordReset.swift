import UsherProtocol

extension MethodHandler {
    /// `request_password_reset`: the reset hook runs with a new token for the account with this email, if any. Needs
    /// what `register` needs; throttled by email and peer so that it cannot flood the hook; the same answer for every
    /// email.
    static let requestPasswordReset = MethodHandler(
        RequestPasswordResetRequest.self,
        permission: .manage,
        reach: .nothing,
        audited: true
    ) { request, call in
        let result = try await call.dispatcher.throttle.hookRequest(
            email: request.email,
            peer: call.context.peer.uid
        ) {
            try await call.registry.requestPasswordReset(provider: request.provider, email: request.email)
        }
        return .result(AccountMessageResult(provider: result), call)
    }
}
