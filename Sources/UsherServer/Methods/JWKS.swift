import UsherProtocol

extension MethodHandler {
    /// `jwks`: the public keys that verify the local provider's tokens.
    static let jwks = MethodHandler(JWKSRequest.self, permission: .read, reach: .nothing) { _, call in
        .result(JWKSRequest.Result(keys: await call.registry.publicKeys()), call)
    }
}
