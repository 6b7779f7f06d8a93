import UsherProtocol

extension MethodHandler {
    /// `login_wait`: waits for an interactive login to complete, then logs its user in as `login` does (or, with
    /// `link_to`, links its identity to that user as `link_credentials` does).
    /// The login must be one the peer's uid began, and a `link_to` user the peer's (`OwnerRule.login`).
    static let loginWait = MethodHandler(
        LoginWaitRequest.self,
        permission: .manage,
        reach: .seats,
        audited: true,
        owner: .login
    ) { request, call in
        // It waits for a person at the provider on its client's behalf: the client ends the wait by leaving (Ctrl-C
        // in `usher login --device`), where every other request is carried out without its client (ClientPresence).
        let result = try await call.context.presence.cancellingWhenGone {
            try await call.registry.loginWait(
                loginID: request.loginID,
                seat: call.requestedSeat(request.seat),
                move: request.move,
                force: request.force,
                scope: call.scope,
                linkTo: request.linkTo,
                peerUID: call.context.peer.uid,
                ownership: call.ownership
            )
        }
        return .result(UserResult(result), call, userID: result.user.id, forced: request.force)
    }
}
