import NIOCore
import UsherCore

/// A subscribed connection's events: one task per subscription forwards them from the hub to the socket, and the
/// connection's handler ends the subscription with the connection (or when a new one replaces it).
extension RequestHandler {
    func forward(_ subscription: EventHub.LineSubscription, context: ChannelHandlerContext) {
        self.state.subscribed(subscription.id)
        self.activity.subscribed = true
        let membership = self.subscribers.add(
            subscriptionID: subscription.id,
            peer: self.dispatcherContext.peer,
            seats: subscription.seats
        )
        let channel = context.channel
        let events = self.dispatcher.registry.events
        let activity = self.activity
        let logger = self.dispatcherContext.logger
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        let revocationNotice = self.varlink == nil ? SocketServer.revocationNotice : VarlinkReply.revocationNotice
        // One task per subscribed connection: it waits for events, which arrive from the registry.
        Task {
            defer { eventLoop.execute { handler.value.forwardingEnded() } }
            for await line in subscription.lines {
                var buffer = channel.allocator.buffer(capacity: line.count)
                buffer.writeBytes(line)
                guard (try? await channel.writeAndFlush(buffer).get()) != nil else { return }
                events.acknowledge(subscription.id, byteCount: line.count)
            }
            guard membership.isRevoked else { return }
            // A reload took away `read`: say so in a line the client can see, then close the connection. No longer
            // subscribed, so a peer that does not take the line is closed by the idle timeout.
            activity.subscribed = false
            logger.notice("subscription ended: the access policy no longer allows \"read\"")
            let notice = revocationNotice
            var buffer = channel.allocator.buffer(capacity: notice.count)
            buffer.writeBytes(notice)
            try? await channel.writeAndFlush(buffer).get()
            try? await channel.close()
        }
    }

    private func forwardingEnded() {
        self.state.forwardingEnded()
        if let context = self.context { self.closeIfDone(context: context) }
    }

    /// Ends the subscription (its forwarding task then ends); the connection is subject to the idle timeout again.
    func unsubscribe() {
        if let id = self.state.unsubscribe() { self.subscriptionEnded(id) }
    }

    /// The subscription `id` ended: it leaves the roster.
    func subscriptionEnded(_ id: UInt64) {
        self.subscribers.remove(id)
        self.activity.subscribed = false
    }
}
