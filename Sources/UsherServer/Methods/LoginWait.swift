import UsherProtocol

extension MethodHandler {
    /// `login_wait`: waits for an interactive login to complete, then logs its user in as `login` does (or, with
    /// `link_to`, links its identity to that user as `link_credentials` does).
    static let loginWait = MethodHandler(LoginWaitRequest.self, permission: .manage, reach: .seats, audited: true) {
        request,
        call in
        let result = try await call.registry.loginWait(
            loginID: request.loginID,
            seat: call.requestedSeat(request.seat),
            move: request.move,
            force: request.force,
            scope: call.scope,
            linkTo: request.linkTo,
            peerUID: call.context.peer.uid
        )
        return .result(UserResult(result), call, userID: result.user.id, forced: request.force)
    }
}
