import UsherProtocol

extension MethodHandler {
    /// `login_begin`: starts an interactive login (browser, device code); `login_wait` finishes it.
    static let loginBegin = MethodHandler(LoginBeginRequest.self, permission: .manage, reach: .nothing, audited: true) {
        request,
        call in
        let result = try await call.registry.loginBegin(
            provider: request.provider,
            type: request.type ?? .authorizationCode,
            redirectURI: request.redirectURI,
            owner: call.context.peer.uid
        )
        return .result(result, call)
    }
}
