import UsherProtocol

extension MethodHandler {
    /// `delete_api_key`: revokes one of a local account's API keys; only the user's owner does.
    static let deleteAPIKey = MethodHandler(
        DeleteAPIKeyRequest.self,
        permission: .manage,
        reach: .device,
        audited: true,
        owner: .user
    ) { request, call in
        let result = try await call.registry.deleteAPIKey(
            name: request.name,
            userID: request.userID,
            ownership: call.ownership
        )
        return .result(result, call, userID: result.userID)
    }
}
