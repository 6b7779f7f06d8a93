import UsherCore
import UsherProtocol

extension MethodHandler {
    /// `open_session`: `pam_usher`'s session stage. Makes the user active on the seat (leases respected, never broken)
    /// and binds the login session to it, durably. The user must be the peer's (`OwnerRule.user`).
    static let openSession = MethodHandler(
        OpenSessionRequest.self,
        permission: .manage,
        reach: .seats,
        audited: true,
        owner: .user
    ) { request, call in
        // Handing the user to another uid is as strong as owning every user: root's and usherd's alone.
        if request.uid != nil, call.ownership != .everyone {
            throw SessionError.notYours(userID: request.user, action: "name another owner for the session of")
        }
        let (binding, change) = try await call.registry.openSession(
            user: request.user,
            seat: call.requestedSeat(request.seat),
            logindSession: request.logindSession,
            service: request.service,
            peerUID: call.context.peer.uid,
            ownerUID: request.uid.map { UInt32($0) },
            scope: call.scope,
            ownership: call.ownership
        )
        let result = OpenSessionRequest.Result(
            binding: binding.id,
            generation: change.generation,
            user: change.user,
            seat: change.seat
        )
        return .result(result, call, userID: change.user.id).auditing(["binding.id": "\(binding.id)"])
    }
}
