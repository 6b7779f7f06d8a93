import UsherProtocol

extension MethodHandler {
    /// `current_user`: the seat's active user, answered on the event loop from bytes encoded once per change.
    static let currentUser = MethodHandler.inline(CurrentUserRequest.self, permission: .read, reach: .seats) {
        request,
        call in
        let view = call.registry.view
        let seat = try call.seat(request.seat)
        if case .seats = call.scope { try call.scope.require([seat ?? view.defaultSeat]) }
        let answer = view.currentUserAnswer(seat: seat) { active in
            var writer = WireWriter()
            active.write(to: &writer)
            return writer.bytes
        }
        return Reply.result(id: call.id, json: answer)
    }
}
