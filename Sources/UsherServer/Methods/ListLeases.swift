import UsherProtocol

extension MethodHandler {
    /// `list_leases`: every lease held now.
    static let listLeases = MethodHandler.inline(ListLeasesRequest.self, permission: .read, reach: .device) {
        _,
        call in
        Reply.result(id: call.id, ListLeasesRequest.Result(leases: call.registry.leases.all()))
    }
}
