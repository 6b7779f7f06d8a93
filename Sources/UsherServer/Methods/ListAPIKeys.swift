import UsherProtocol

extension MethodHandler {
    /// `list_api_keys`: the names and dates of a local account's API keys (never the keys), to the user's owner.
    static let listAPIKeys = MethodHandler(ListAPIKeysRequest.self, permission: .manage, reach: .device, owner: .user) {
        request,
        call in
        let keys = try await call.registry.listAPIKeys(userID: request.userID, ownership: call.ownership)
        return .result(keys, call)
    }
}
