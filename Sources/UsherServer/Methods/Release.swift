import UsherCore
import UsherProtocol

extension MethodHandler {
    /// `release`: ends a lease this connection holds.
    static let release = MethodHandler(ReleaseRequest.self, permission: .token, reach: .nothing, audited: true) {
        request,
        call in
        guard call.registry.leases.release(request.lease, connectionID: call.context.connectionID) != nil else {
            throw SessionError.leaseNotFound(request.lease)
        }
        return .result(ReleaseRequest.Result(lease: request.lease, released: true), call)
    }
}
