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
                users: StatusRequest.UserCounts(loggedIn: snapshot.loggedIn, loggedOut: snapshot.loggedOut),
                activeUserID: snapshot.activeUserID,
                connections: call.dispatcher.connectionCount(),
                refresh: StatusRequest.RefreshCounters(snapshot.refresh)
            ),
            call
        )
    }
}
