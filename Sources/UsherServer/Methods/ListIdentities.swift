import UsherCore
import UsherProtocol

extension MethodHandler {
    /// `list_identities`: a user's identities (default: the seat's active user), from the published state.
    static let listIdentities = MethodHandler.inline(ListIdentitiesRequest.self, permission: .read, reach: .seats) {
        request,
        call in
        let view = call.registry.view
        let userID: String
        if let requested = request.userID {
            userID = requested
        } else {
            let seat = try call.seat(request.seat)
            if case .seats = call.scope { try call.scope.require([seat ?? view.defaultSeat]) }
            guard let active = view.activeUser(on: seat) else { throw SessionError.noActiveUser }
            userID = active
        }
        guard let user = view.info(userID) else { throw SessionError.userNotFound(userID) }
        // A rule limited to seats reaches the users active on them only.
        if case .seats = call.scope, request.userID != nil { try call.scope.require([view.seat(of: userID) ?? ""]) }
        return Reply.result(
            id: call.id,
            ListIdentitiesRequest.Result(userID: user.id, identities: user.identities)
        )
    }
}
