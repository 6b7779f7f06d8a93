import UsherProtocol

extension MethodHandler {
    /// `status`: the daemon's version, uptime, users, connections and refresh counters.
    static let status = MethodHandler(StatusRequest.self, permission: .read, reach: .device) { _, call in
        let snapshot = await call.registry.snapshot()
        let uptime = ContinuousClock.now - call.dispatcher.startedAt
        return .result(
            StatusRequest.Result(
                version: call.dispatcher.version,
                uptimeSeconds: uptime.components.seconds,
                generation: snapshot.generation,
                users: UserCounts(loggedIn: Int64(snapshot.loggedIn), loggedOut: Int64(snapshot.loggedOut)),
                activeUserID: snapshot.activeUserID,
                connections: Int64(call.dispatcher.connectionCount()),
                refresh: RefreshCounters(snapshot.refresh)
            ),
            call
        )
    }
}
