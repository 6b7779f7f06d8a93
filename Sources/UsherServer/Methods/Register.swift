import UsherProtocol

extension MethodHandler {
    /// `register`: a new local account (throttled like a login).
    static let register = MethodHandler(RegisterRequest.self, permission: .manage, reach: .nothing, audited: true) {
        request,
        call in
        let result = try await call.dispatcher.throttle.register(email: request.email, peer: call.context.peer.uid) {
            try await call.registry.register(
                provider: request.provider,
                email: request.email,
                password: request.password
            )
        }
        return .result(RegisterRequest.Result(result), call)
    }
}
