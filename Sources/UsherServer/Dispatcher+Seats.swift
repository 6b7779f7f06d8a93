import UsherCore
import UsherProtocol

/// Which seat a request is about, and the seat and lease methods.
extension Dispatcher {
    /// The seat a request is about: the one it names (which must be known), else the caller's seat as logind saw it
    /// when the connection was accepted, else nil (the registry's default seat).
    func seat(_ requested: String?, _ context: Context) throws(SessionError) -> String? {
        if let requested {
            guard self.registry.view.isKnown(seat: requested) else { throw .seatNotFound(requested) }
            return requested
        }
        return context.seat
    }

    /// The seat whose rules apply to a request, read from its params without decoding them (only when the policy
    /// has seat-scoped rules). Methods about no seat in particular are checked as being about the default seat.
    func permissionSeat(_ head: RequestHead, _ context: Context) -> String {
        head.peekParam("seat") ?? context.seat ?? self.registry.view.defaultSeat
    }

    func answerSeatsAndLeases(
        _ method: Method,
        _ request: Request,
        _ context: Context
    ) async throws -> (Outcome, String?, Timestamp?) {
        let id = request.id
        func reply(_ result: some Encodable) -> (Outcome, String?, Timestamp?) {
            (.response(LineCodec.encodeResult(id: id, result)), nil, nil)
        }
        switch method {
        case .listSeats:
            _ = try ListSeatsRequest(params: request.params)
            return reply(self.registry.view.listSeats())
        case .inhibit:
            let typed = try InhibitRequest(params: request.params)
            let holder = LeaseBook.Holder(
                connectionID: context.connectionID,
                pid: context.peer.pid,
                uid: context.peer.uid,
                executable: context.executable,
                notify: context.notify
            )
            let result = try await self.registry.inhibit(
                seat: try self.seat(typed.seat, context),
                mode: typed.mode,
                who: typed.who,
                why: typed.why,
                holder: holder
            )
            // The lease's audit record (not a line of its own: coalesced per peer like every audit record).
            self.audit(
                "inhibit",
                userID: nil,
                outcome: "ok",
                details: [
                    "lease": "\(result.lease)", "seat": "\(result.seat)", "lease.mode": "\(typed.mode.rawValue)",
                    "lease.who": "\(typed.who)",
                ],
                context
            )
            return reply(result)
        case .release:
            let typed = try ReleaseRequest(params: request.params)
            guard self.registry.leases.release(typed.lease, connectionID: context.connectionID) != nil else {
                throw SessionError.leaseNotFound(typed.lease)
            }
            return reply(ReleaseRequest.Result(lease: typed.lease, released: true))
        case .listLeases:
            _ = try ListLeasesRequest(params: request.params)
            return reply(ListLeasesRequest.Result(leases: self.registry.leases.all()))
        default:
            throw ResponseError(.internal, "not a seat or lease method")
        }
    }

    /// A connection closed: the leases it held die with it, as a logind inhibitor dies with its file descriptor.
    package func connectionClosed(_ context: Context) {
        for lease in self.registry.leases.releaseAll(connectionID: context.connectionID) {
            self.audit(
                "release",
                userID: nil,
                outcome: "connection_closed",
                details: ["lease": "\(lease.lease)"],
                context
            )
        }
    }
}
