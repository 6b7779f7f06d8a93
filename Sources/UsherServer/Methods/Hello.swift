import UsherProtocol

extension MethodHandler {
    /// `hello`: always allowed; who the daemon is, and who it takes the peer for. Written by `WireWriter`: it is the
    /// first call of every client, and `JSONEncoder` took half of its instructions.
    static let hello = MethodHandler.inline(HelloRequest.self, permission: nil, reach: .nothing) { _, call in
        let result = HelloRequest.Result(
            protocol: Int64(protocolVersion),
            server: "usherd",
            version: call.dispatcher.version,
            peer: PeerInfo(
                uid: Int64(call.context.peer.uid),
                gid: Int64(call.context.peer.gid),
                pid: Int64(call.context.peer.pid)
            ),
            permissions: call.permissions.sorted().map(\.rawValue),
            program: call.context.peer.program.wireValue
        )
        return Reply.result(id: call.id) { result.write(to: &$0) }
    }
}
