import Logging
import UsherCore
import UsherProtocol

extension MethodHandler {
    /// `access_token`: a token valid for at least `min_valid`, answered on the event loop when the published one is,
    /// else refreshed first through the registry. A narrowed token (asked for, or the only kind the peer's rules give:
    /// `TokenGrant`) is answered on the event loop too when the one held is fresh, else made through the registry.
    static let accessToken = MethodHandler(
        AccessTokenRequest.self,
        permission: .token,
        reach: .seats,
        audited: true,
        read: { request, call in
            let minimum = request.minValid ?? AccessTokenRequest.defaultMinimumValidity
            let seat = try call.seat(request.seat)
            if let narrowing = try call.tokenNarrowing(request.narrowing) {
                return try Self.freshNarrowedAnswer(request, narrowing, seat: seat, minimum: minimum, call)
            }
            guard
                let answer = try call.registry.view.freshTokenAnswer(
                    userID: request.userID,
                    seat: seat,
                    minValidSeconds: minimum,
                    scope: call.scope,
                    encode: { token in
                        var writer = WireWriter(capacity: token.accessToken.utf8.count + 160)
                        token.write(to: &writer)
                        return writer.bytes
                    }
                )
            else { return nil }
            return ReadAnswer(
                Reply.result(id: call.id, json: answer.answer),
                userID: answer.userID,
                tokenExpiresAt: answer.expiresAt
            )
        },
        answer: { request, call in
            let minimum = request.minValid ?? AccessTokenRequest.defaultMinimumValidity
            let token: IssuedToken
            if let narrowing = try call.tokenNarrowing(request.narrowing) {
                token = try await call.registry.narrowedAccessToken(
                    userID: request.userID,
                    minValidSeconds: minimum,
                    narrowing: narrowing,
                    seat: call.requestedSeat(request.seat),
                    scope: call.scope
                )
            } else {
                token = try await call.registry.accessToken(
                    userID: request.userID,
                    minValidSeconds: minimum,
                    seat: call.requestedSeat(request.seat),
                    scope: call.scope
                )
            }
            return .result(
                token,
                call,
                userID: token.userID,
                tokenExpiresAt: token.expiresAt
            )
            .auditing(Self.narrowingDetails(token))
        }
    )

    /// The answer for a narrowed token held fresh, on the event loop; nil: the registry makes one.
    private static func freshNarrowedAnswer(
        _ request: AccessTokenRequest,
        _ narrowing: TokenNarrowing,
        seat: String?,
        minimum: Int64,
        _ call: Call
    ) throws -> ReadAnswer? {
        let registry = call.registry
        guard let userID = try registry.view.loggedInUser(userID: request.userID, seat: seat, scope: call.scope)
        else { return nil }
        let key = NarrowedTokenCache.Key(userID: userID, narrowing: narrowing)
        let now = registry.view.now
        guard let token = registry.narrowed.fresh(key, minValidMilliseconds: minimum * 1000, now: now) else {
            return nil
        }
        let issued = SessionRegistry.issued(userID, token, narrowing: narrowing, now: now)
        var writer = WireWriter(capacity: issued.accessToken.utf8.count + 256)
        issued.write(to: &writer)
        return ReadAnswer(
            Reply.result(id: call.id, json: writer.bytes),
            userID: userID,
            tokenExpiresAt: token.expiresAt,
            auditDetails: Self.narrowingDetails(issued)
        )
    }

    /// What the audit record of a narrowed token names: its audience and scopes (never the token).
    static func narrowingDetails(_ token: IssuedToken) -> Logger.Metadata {
        var details: Logger.Metadata = [:]
        if let audience = token.audience { details["token.audience"] = "\(audience)" }
        if let scopes = token.scopes { details["token.scopes"] = "\(scopes.joined(separator: " "))" }
        return details
    }
}
