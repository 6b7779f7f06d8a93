import UsherProtocol

extension MethodHandler {
    /// `login`: authenticates credentials, adds (or finds) the user and makes it active on the seat.
    static let login = MethodHandler(LoginRequest.self, permission: .manage, reach: .seats, audited: true) {
        request,
        call in
        let seat = call.requestedSeat(request.seat)
        let result = try await call.dispatcher.throttle.login(
            credentials: request.credentials,
            peer: call.context.peer.uid,
            expectedAccount: request.expectEmail
        ) {
            try await call.registry.login(
                provider: request.provider,
                credentials: request.credentials,
                seat: seat,
                move: request.move == true,
                force: request.force == true,
                scope: call.scope,
                peerUID: call.context.peer.uid,
                activate: request.activates,
                expectEmail: request.expectEmail
            )
        }
        return .result(result, call, userID: result.user.id, forced: request.force == true)
    }
}
