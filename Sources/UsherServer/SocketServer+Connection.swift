import Logging
import NIOCore
import UsherCore
import UsherFraming
import UsherProtocol

/// Serving one connection: admission, the request loop, subscriptions, and a close that loses no answer.
extension SocketServer {
    func serve(_ accepted: Accepted) async {
        let connection = accepted.connection
        let peer = accepted.peer
        let channel = connection.channel
        var logger = self.logger
        logger[metadataKey: "peer.uid"] = "\(peer.uid)"
        logger[metadataKey: "peer.pid"] = "\(peer.pid)"
        let settings = self.dispatcher.settings
        let admission = self.tracker.admit(
            channel,
            uid: peer.uid,
            privileged: settings.policy.isPrivileged(peer),
            limits: settings.limits
        )
        guard admission == .admitted else {
            if case .refused(let reason) = admission {
                let (log, unlogged) = self.tracker.shouldLogRefusal(of: peer.uid)
                if log {
                    logger.warning(
                        "too many connections; refusing one",
                        metadata: ["reason": "\(reason)", "refused.unlogged": "\(unlogged)"]
                    )
                }
                try? await connection.executeThenClose { _, outbound in
                    try await outbound.write(
                        LineCodec.encodeError(id: nil, ResponseError(.tooManyConnections, reason))
                    )
                    try await Self.flushed(channel)
                }
            }
            return
        }
        defer { self.tracker.remove(channel) }
        let context = Dispatcher.Context(
            peer: peer,
            executable: KernelPeer.executable(of: peer.pid),
            logger: logger,
            close: { channel.close(promise: nil) }
        )
        do {
            try await connection.executeThenClose { inbound, outbound in
                try await self.answerRequests(
                    inbound,
                    outbound,
                    channel: channel,
                    context: context,
                    activity: accepted.activity
                )
                // The peer closed its side (or the daemon is stopping) and every request it sent is answered. Closing
                // now would throw away whatever the socket has not taken yet (a multi-megabyte `list_users`):
                // wait until it is all written, then close.
                try await Self.flushed(channel)
            }
        } catch {
            logger.debug("connection ended with an error", metadata: ["error": "\(error)"])
        }
    }

    /// Answers requests in arrival order until the input ends, the line limit is hit, or the subscription is revoked.
    private func answerRequests(
        _ inbound: NIOAsyncChannelInboundStream<LineFrame>,
        _ outbound: NIOAsyncChannelOutboundWriter<[UInt8]>,
        channel: any Channel,
        context: Dispatcher.Context,
        activity: ConnectionActivity
    ) async throws {
        let subscribers = self.subscribers
        try await withThrowingDiscardingTaskGroup { group in
            var subscriptionID: UInt64?
            /// Ends the subscription (its forwarding task then ends); the connection is subject to the idle timeout
            /// again.
            func unsubscribe() {
                subscriptionID.map(subscribers.remove)
                subscriptionID = nil
                activity.subscribed = false
            }
            defer { unsubscribe() }
            for try await frame in inbound {
                guard case .line(let buffer) = frame else {
                    try await outbound.write(
                        LineCodec.encodeError(
                            id: nil,
                            ResponseError(.lineTooLong, "the line is longer than the limit; closing the connection")
                        )
                    )
                    break
                }
                let line = buffer.readableBytesView
                if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
                activity.requestStarted()
                let outcome = await self.dispatcher.handle(line: line, context: context)
                // Answered: from here on the connection may go idle even while the peer is slow to take the answer.
                activity.requestFinished()
                self.tracker.requestAnswered()
                switch outcome {
                case .response(let bytes):
                    try await outbound.write(bytes)
                case .subscribed(let bytes, let subscription):
                    unsubscribe()
                    subscriptionID = subscription.id
                    activity.subscribed = true
                    try await outbound.write(bytes)
                    let membership = subscribers.add(subscriptionID: subscription.id, peer: context.peer)
                    let events = self.dispatcher.registry.events
                    group.addTask {
                        for await line in subscription.lines {
                            try await outbound.write(line)
                            events.acknowledge(subscription.id, byteCount: line.count)
                        }
                        guard membership.isRevoked else { return }
                        // A reload took away `read`: say so in a line the client can see, then close the connection.
                        // No longer subscribed, so a peer that does not take the line is closed by the idle timeout.
                        activity.subscribed = false
                        context.logger.notice("subscription ended: the access policy no longer allows \"read\"")
                        try await outbound.write(Self.revocationNotice)
                        try await Self.flushed(channel)
                        channel.close(promise: nil)
                    }
                }
                // Fairness: let every other connection answer a request before this one answers its next, however
                // many it has pipelined.
                await Task.yield()
            }
            // The peer closed its side (or the daemon is stopping): end the subscription, which ends the forwarding
            // task, so the connection closes.
            unsubscribe()
        }
    }

    /// The last line a subscriber whose `read` permission was revoked receives (an error with a null id: it answers
    /// no request of the peer's).
    static let revocationNotice = LineCodec.encodeError(
        id: nil,
        ResponseError(
            .permissionDenied,
            "the access policy no longer allows this peer \"read\"; the subscription has ended and the connection closes"
        )
    )

    /// Waits until everything written to `channel` so far has been handed to the kernel.
    ///
    /// An empty write travels behind every earlier one (writes complete in order), so its completion means they are
    /// all done. If the peer never reads, the idle timeout (or the shutdown grace) closes the connection and this
    /// throws.
    static func flushed(_ channel: any Channel) async throws {
        try await channel.writeAndFlush([UInt8]()).get()
    }
}
