import UsherProtocol

extension MethodHandler {
    /// `set_pin`: sets the PIN that unlocks the user's seat. The user's own: its session's uid, root or usherd's.
    static let setPIN = MethodHandler(
        SetPINRequest.self,
        permission: .manage,
        reach: .seats,
        audited: true,
        owner: .user
    ) { request, call in
        let userID = try await call.registry.setPIN(
            request.pin,
            userID: request.userID,
            seat: call.requestedSeat(nil),
            ownership: call.ownership,
            scope: call.scope
        )
        return .result(SetPINRequest.Result(userID: userID), call, userID: userID)
    }
}
