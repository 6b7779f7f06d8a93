import UsherProtocol

extension MethodHandler {
    /// `resend_confirmation`: the confirmation hook runs again with a new token, for an unconfirmed account. Needs what
    /// `register` needs; throttled by email and peer so that it cannot flood the hook; the same answer for every email.
    static let resendConfirmation = MethodHandler(
        ResendConfirmationRequest.self,
        permission: .manage,
        reach: .nothing,
        audited: true
    ) { request, call in
        let result = try await call.dispatcher.throttle.hookRequest(
            email: request.email,
            peer: call.context.peer.uid
        ) {
            try await call.registry.resendConfirmation(provider: request.provider, email: request.email)
        }
        return .result(AccountMessageResult(provider: result), call)
    }
}
