import UsherProtocol

extension MethodHandler {
    /// `list_api_keys`: the names and dates of a local account's API keys (never the keys).
    static let listAPIKeys = MethodHandler(ListAPIKeysRequest.self, permission: .manage, reach: .device) {
        request,
        call in
        .result(ListAPIKeysRequest.Result(try await call.registry.listAPIKeys(userID: request.userID)), call)
    }
}
