import UsherProtocol

extension MethodHandler {
    /// `delete_api_key`: revokes one of a local account's API keys.
    static let deleteAPIKey = MethodHandler(
        DeleteAPIKeyRequest.self,
        permission: .manage,
        reach: .device,
        audited: true
    ) { request, call in
        let result = try await call.registry.deleteAPIKey(name: request.name, userID: request.userID)
        return .result(DeleteAPIKeyRequest.Result(result), call, userID: result.userID)
    }
}
