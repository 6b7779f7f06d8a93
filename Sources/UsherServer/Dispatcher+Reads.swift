import UsherCore
import UsherProtocol

/// Reads answered on the connection's event loop from the registry's published state (`SessionView`): no hop to the
/// registry actor, and `current_user` is bytes encoded once per change.
extension Dispatcher {
    /// Lists of at most this many users (without `limit`) are answered on the event loop; longer ones are built off
    /// it, so one `list_users` of a huge device does not hold up the other connections of its loop.
    static let inlineListLimit = 1000

    /// The answer to a read that the published state can give, or nil when the request needs the registry (a token
    /// that must be refreshed first, a very long list, any change).
    func answerRead(_ pending: Pending, context: Context) -> [UInt8]? {
        switch pending.method {
        case .currentUser, .listUsers, .accessToken, .hello: break
        default: return nil
        }
        let id = pending.head.id
        let params: Params
        do {
            params = try pending.head.decodeParams()
        } catch {
            return LineCodec.encodeError(id: error.id, error.error)
        }
        let view = self.registry.view
        do {
            switch pending.method {
            case .currentUser:
                let typed = try CurrentUserRequest(params: params)
                let seat = try self.seat(typed.seat, context)
                if case .seats = pending.scope { try pending.scope.require([seat ?? view.defaultSeat]) }
                return WireWriter.responseLine(id: id, resultJSON: view.currentUserJSON(seat: seat))
            case .listUsers:
                let typed = try ListUsersRequest(params: params)
                guard typed.limit != nil else {
                    return view.listUsersJSON(maximumUsers: Self.inlineListLimit).map {
                        WireWriter.responseLine(id: id, resultJSON: $0)
                    }
                }
                let result = try view.listUsers(limit: typed.limit.map(Int.init), after: typed.after)
                return WireWriter.responseLine(id: id, capacity: 600 * result.users.count + 64) {
                    result.write(to: &$0)
                }
            case .accessToken:
                let typed = try AccessTokenRequest(params: params)
                let minimum = typed.minValid ?? AccessTokenRequest.defaultMinimumValidity
                let seat = try self.seat(typed.seat, context)
                guard
                    let answer = try view.freshTokenJSON(
                        userID: typed.userID,
                        seat: seat,
                        minValidSeconds: minimum,
                        scope: pending.scope
                    )
                else {
                    return nil
                }
                self.audit(
                    pending.method.rawValue,
                    userID: answer.userID,
                    outcome: "ok",
                    tokenExpiresAt: answer.expiresAt,
                    context
                )
                return WireWriter.responseLine(id: id, resultJSON: answer.json)
            case .hello:
                _ = try HelloRequest(params: params)
                return LineCodec.encodeResult(
                    id: id,
                    HelloRequest.Result(
                        protocol: protocolVersion,
                        server: "usherd",
                        version: self.version,
                        peer: HelloRequest.Peer(uid: context.peer.uid, gid: context.peer.gid, pid: context.peer.pid),
                        permissions: pending.permissions.sorted().map(\.rawValue)
                    )
                )
            default:
                return nil
            }
        } catch {
            return self.failed(
                pending.method,
                Request(id: id, method: pending.head.method, params: params),
                error,
                context
            )
        }
    }
}
