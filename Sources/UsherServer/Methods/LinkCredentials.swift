import UsherProtocol

extension MethodHandler {
    /// `link_credentials`: adds the identity of credentials to a logged-in user. It authenticates as a login does, so it
    /// needs what a login needs and is throttled like one; and, as adding a way to log in as the user is as strong as
    /// being it, the user must be the peer's (`OwnerRule.user`).
    static let linkCredentials = MethodHandler(
        LinkCredentialsRequest.self,
        permission: .manage,
        reach: .seats,
        audited: true,
        owner: .user
    ) { request, call in
        let result = try await call.dispatcher.throttle.login(
            credentials: request.credentials,
            peer: call.context.peer.uid
        ) {
            try await call.registry.linkCredentials(
                userID: request.userID,
                seat: call.requestedSeat(request.seat),
                provider: request.provider,
                credentials: request.credentials,
                move: request.move == true,
                force: request.force == true,
                scope: call.scope,
                ownership: call.ownership
            )
        }
        return .result(result, call, userID: result.user.id, forced: request.force == true)
    }
}
