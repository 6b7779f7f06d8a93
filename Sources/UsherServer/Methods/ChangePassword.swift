import UsherProtocol

extension MethodHandler {
    /// `change_password`: a new password for an email/password account, given its current one (throttled like a
    /// login). About an account, not a seat; proving the password is what it asks, as a login does.
    static let changePassword = MethodHandler(
        ChangePasswordRequest.self,
        permission: .manage,
        reach: .nothing,
        audited: true
    ) { request, call in
        let result = try await call.dispatcher.throttle.changePassword(
            email: request.email,
            peer: call.context.peer.uid
        ) {
            try await call.registry.changePassword(
                provider: request.provider,
                email: request.email,
                oldPassword: request.oldPassword,
                newPassword: request.newPassword
            )
        }
        return .result(result, call)
    }
}
