import UsherCore
import UsherProtocol

extension MethodHandler {
    /// `inhibit`: a lease on the seat's active user, held by this connection.
    static let inhibit = MethodHandler(InhibitRequest.self, permission: .token, reach: .seats, audited: true) {
        request,
        call in
        let context = call.context
        let holder = LeaseBook.Holder(
            connectionID: context.connectionID,
            pid: context.peer.pid,
            uid: context.peer.uid,
            executable: context.executable,
            notify: context.notify
        )
        let result = try await call.registry.inhibit(
            seat: call.requestedSeat(request.seat),
            mode: request.mode,
            who: request.who,
            why: request.why,
            holder: holder,
            scope: call.scope
        )
        // The lease's audit record (not a line of its own: coalesced per peer like every audit record).
        return .result(InhibitRequest.Result(result), call).auditing([
            "lease": "\(result.lease)", "seat": "\(result.seat)", "lease.mode": "\(request.mode.rawValue)",
            "lease.who": "\(request.who)",
        ])
    }
}
