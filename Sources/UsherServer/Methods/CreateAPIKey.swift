import UsherProtocol

extension MethodHandler {
    /// `create_api_key`: a new API key for a local account (shown once). A key logs in as the user for as long as it
    /// lives, so only the user's owner creates one (`OwnerRule.user`).
    static let createAPIKey = MethodHandler(
        CreateAPIKeyRequest.self,
        permission: .manage,
        reach: .device,
        audited: true,
        owner: .user
    ) { request, call in
        let result = try await call.registry.createAPIKey(
            name: request.name,
            userID: request.userID,
            ownership: call.ownership
        )
        return .result(result, call, userID: result.userID)
    }
}
