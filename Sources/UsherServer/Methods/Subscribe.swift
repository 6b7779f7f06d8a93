import UsherCore
import UsherProtocol

extension MethodHandler {
    /// `subscribe`: events on this connection from now on.
    static let subscribe = MethodHandler(SubscribeRequest.self, permission: .read, reach: .seats) { request, call in
        let registry = call.registry
        for seat in request.seats ?? [] where !registry.view.isKnown(seat: seat) {
            throw SessionError.seatNotFound(seat)
        }
        // A peer whose `read` is limited to seats subscribes to those seats (all of them, or some), and gets only the
        // events about them.
        if case .seats(let allowed) = call.scope {
            try call.scope.require(request.seats ?? allowed.sorted())
        }
        let logger = call.context.logger
        let close = call.context.close
        let (generation, subscription) = await registry.subscribeLines(
            filter: request.events.map(Set.init),
            seats: request.seats.map(Set.init) ?? call.scope.limitedTo,
            seatedOnly: call.scope != .everywhere,
            format: call.context.eventFormat,
            maximumPendingBytes: call.dispatcher.settings.limits.maximumPendingBytes,
            onOverflow: {
                logger.warning("subscriber stopped reading; disconnecting it (limits.max_pending_bytes)")
                close()
            }
        )
        let response = Reply.result(
            id: call.id,
            SubscribeRequest.Result(generation: generation, subscribed: request.events ?? EventName.subscribable)
        )
        return MethodHandler.Answer(.subscribed(response: response, subscription: subscription))
    }
}

extension EventLineFormat {
    /// Events as this socket writes them: one JSON object per line.
    static let lines = EventLineFormat(LineCodec.encode)
}
