import UsherProtocol

extension MethodHandler {
    /// `access_token`: a token valid for at least `min_valid`, answered on the event loop when the published one is,
    /// else refreshed first through the registry.
    static let accessToken = MethodHandler(
        AccessTokenRequest.self,
        permission: .token,
        reach: .seats,
        audited: true,
        read: { request, call in
            let minimum = request.minValid ?? AccessTokenRequest.defaultMinimumValidity
            let seat = try call.seat(request.seat)
            guard
                let answer = try call.registry.view.freshTokenAnswer(
                    userID: request.userID,
                    seat: seat,
                    minValidSeconds: minimum,
                    scope: call.scope,
                    encode: { result in
                        var writer = WireWriter(capacity: result.accessToken.utf8.count + 160)
                        result.write(to: &writer)
                        return writer.bytes
                    }
                )
            else { return nil }
            call.dispatcher.audit(
                Method.accessToken.rawValue,
                userID: answer.userID,
                outcome: "ok",
                tokenExpiresAt: answer.expiresAt,
                call.context
            )
            return WireWriter.responseLine(id: call.id, resultJSON: answer.answer)
        },
        answer: { request, call in
            let result = try await call.registry.accessToken(
                userID: request.userID,
                minValidSeconds: request.minValid ?? AccessTokenRequest.defaultMinimumValidity,
                seat: call.requestedSeat(request.seat),
                scope: call.scope
            )
            return .result(result, call, userID: result.userID, tokenExpiresAt: result.expiresAt)
        }
    )
}
