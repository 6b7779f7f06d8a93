import UsherProtocol

extension MethodHandler {
    /// `create_api_key`: a new API key for a local account (shown once).
    static let createAPIKey = MethodHandler(
        CreateAPIKeyRequest.self,
        permission: .manage,
        reach: .device,
        audited: true
    ) { request, call in
        let result = try await call.registry.createAPIKey(name: request.name, userID: request.userID)
        return .result(CreateAPIKeyRequest.Result(result), call, userID: result.userID)
    }
}
