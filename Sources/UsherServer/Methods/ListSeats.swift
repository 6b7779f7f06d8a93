import UsherProtocol

extension MethodHandler {
    /// `list_seats`: every seat and its active user, from the published state.
    static let listSeats = MethodHandler.inline(ListSeatsRequest.self, permission: .read, reach: .device) { _, call in
        Reply.result(id: call.id, ListSeatsRequest.Result(call.registry.view.listSeats()))
    }
}
