import UsherCore
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
        let wait = {
            try await call.context.presence.cancellingWhenGone {
                try await call.registry.loginWait(
                    loginID: request.loginID,
                    seat: call.requestedSeat(request.seat),
                    move: request.move == true,
                    force: request.force == true,
                    scope: call.scope,
                    linkTo: request.linkTo,
                    peerUID: call.context.peer.uid,
                    ownership: call.ownership,
                    activate: request.activates,
                    expectEmail: request.expectEmail
                )
            }
        }
        // Unthrottled (the provider's page throttles the password), except that another account than the one expected
        // is a failed login of the expected one, as at `login`.
        let result =
            if let expected = request.expectEmail {
                try await call.dispatcher.throttle.attempt(
                    account: expected,
                    peer: call.context.peer.uid,
                    classify: { error in
                        if case .identityMismatch? = error as? SessionError { return .failed }
                        return .inconclusive
                    },
                    wait
                )
            } else {
                try await wait()
            }
        return .result(result, call, userID: result.user.id, forced: request.force == true)
    }
}
