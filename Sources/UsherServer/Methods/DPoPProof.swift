import UsherProtocol

extension MethodHandler {
    /// `dpop_proof`: a DPoP proof for one HTTP request, signed with the key of the user's session; audited as
    /// `access_token` is, since a proof lets its holder use the token.
    static let dpopProof = MethodHandler(DPoPProofRequest.self, permission: .token, reach: .seats, audited: true) {
        request,
        call in
        let result = try await call.registry.dpopProof(
            userID: request.userID,
            method: request.htm,
            url: request.htu,
            nonce: request.nonce,
            narrowing: try call.tokenNarrowing(request.narrowing),
            seat: call.requestedSeat(request.seat),
            scope: call.scope
        )
        return .result(
            result,
            call,
            userID: result.userID,
            tokenExpiresAt: result.accessTokenExpiresAt
        )
    }
}
