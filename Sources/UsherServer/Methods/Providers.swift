import UsherProtocol

extension MethodHandler {
    /// `providers`: the configured identity providers.
    static let providers = MethodHandler(ProvidersRequest.self, permission: .read, reach: .nothing) { _, call in
        .result(
            ProvidersRequest.Result(providers: await call.registry.providerSummaries().map(ProviderInfo.init)),
            call
        )
    }
}
