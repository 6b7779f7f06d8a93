import UsherProtocol

extension MethodHandler {
    /// `user_status`: `pam_usher`'s account stage. Whether the account with an email is logged in on the device, and
    /// why its last session ended; one store read, no hop to the registry actor.
    static let userStatus = MethodHandler(UserStatusRequest.self, permission: .read, reach: .device) {
        request,
        call in
        .result(try await call.registry.userStatus(email: request.email, unixUser: request.unixUser), call)
    }
}
