import UsherProtocol

extension MethodHandler {
    /// `reset_password`: an administrator sets a new password for an email/password account, without the current
    /// one; every session of the account on the device ends. It logs users out wherever they are active, so no
    /// seat-scoped rule grants it.
    static let resetPassword = MethodHandler(
        ResetPasswordRequest.self,
        permission: .manage,
        reach: .device,
        audited: true
    ) { request, call in
        let result = try await call.registry.resetPassword(
            provider: request.provider,
            email: request.email,
            newPassword: request.newPassword
        )
        return .result(ResetPasswordRequest.Result(result), call)
    }
}
