import NIOCore
import NIOHTTP1
import NIOPosix
import UsherLoopback

/// A one-shot HTTP/1.1 server on a loopback address: the redirect target of the browser login.
///
/// Every complete request is handed to `answer`, which says what to reply and whether the wait is over; the first
/// outcome ends `outcome(within:)`. NIO parses HTTP (`configureHTTPServerPipeline`, which answers malformed requests
/// with 400 itself); every response closes its connection, and a connection that sends nothing for 5 seconds (a
/// browser's speculative preconnection) is closed, so no client can hold the server up.
///
/// The server runs on an event loop of its own, started here and stopped by `close()`: the CLI starts NIO for the
/// browser login only, never for its quick commands.
package final class LoopbackHTTPServer: Sendable {
    /// What to reply to one request, and whether that ends the wait.
    package struct Answer: Sendable {
        /// The status code; the reason phrase is the standard one.
        package var status: Int
        /// The HTML page sent back.
        package var html: String
        /// When not nil, the result of `outcome(within:)`: a value, or an error to throw.
        package var outcome: Result<String, any Error>?

        package init(status: Int, html: String, outcome: Result<String, any Error>? = nil) {
            self.status = status
            self.html = html
            self.outcome = outcome
        }
    }

    /// `outcome(within:)` ran out of time.
    package struct TimedOut: Error {}

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let result: EventLoopPromise<String>

    private init(group: MultiThreadedEventLoopGroup, channel: any Channel, result: EventLoopPromise<String>) {
        self.group = group
        self.channel = channel
        self.result = result
    }

    /// Listens on `host`'s loopback address at `port` (see `LoopbackSocket`).
    ///
    /// - Parameter answer: called on the server's event loop for each request, with its method and request target
    ///   (`/callback?code=...`).
    /// - Throws: `LoopbackSocket.BindError`.
    package static func start(
        host: String,
        port: Int,
        answer: @escaping @Sendable (_ method: String, _ target: String) -> Answer
    ) async throws(LoopbackSocket.BindError) -> LoopbackHTTPServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let result = group.next().makePromise(of: String.self)
        let bootstrap = ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(IdleStateHandler(readTimeout: .seconds(5)))
                    try pipeline.addHandler(RequestHandler(answer: answer, result: result))
                }
            }
        do {
            let channel = try await LoopbackSocket.bind(bootstrap, host: host, port: port)
            return LoopbackHTTPServer(group: group, channel: channel, result: result)
        } catch {
            result.fail(error)
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// The port listened on.
    package var port: Int? { self.channel.localAddress?.port }

    /// Waits for the first request whose answer carries an outcome, for at most `timeout`.
    ///
    /// - Throws: the outcome's error, or `TimedOut`.
    package func outcome(within timeout: Duration) async throws -> String {
        let result = self.result
        let expiry = result.futureResult.eventLoop.scheduleTask(in: TimeAmount(timeout)) { result.fail(TimedOut()) }
        defer { expiry.cancel() }
        return try await result.futureResult.get()
    }

    /// Stops listening, closes every connection and stops the event loop.
    package func close() async {
        self.result.fail(CancellationError())
        try? await self.channel.close()
        try? await self.group.shutdownGracefully()
    }
}

/// Answers each request of one connection, then closes it.
private final class RequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let answer: @Sendable (String, String) -> LoopbackHTTPServer.Answer
    private let result: EventLoopPromise<String>
    private var head: HTTPRequestHead?

    init(answer: @escaping @Sendable (String, String) -> LoopbackHTTPServer.Answer, result: EventLoopPromise<String>) {
        self.answer = answer
        self.result = result
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head = self.head else { return }
            self.head = nil
            self.respond(context, self.answer(head.method.rawValue, head.uri))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func respond(_ context: ChannelHandlerContext, _ answer: LoopbackHTTPServer.Answer) {
        let body = context.channel.allocator.buffer(string: answer.html)
        let headers = HTTPHeaders([
            ("Content-Type", "text/html; charset=utf-8"), ("Content-Length", "\(body.readableBytes)"),
            ("Connection", "close"), ("Cache-Control", "no-store"),
        ])
        let status = HTTPResponseStatus(statusCode: answer.status)
        context.write(
            self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
            promise: nil
        )
        context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: written)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let result = self.result
        let outcome = answer.outcome
        // The outcome is reported once the page is written, so that closing the server then cannot cut it off. A
        // promise completes once: a later outcome (a second tab) changes nothing.
        written.futureResult.whenComplete { _ in
            boundContext.value.close(promise: nil)
            if let outcome { result.completeWith(outcome) }
        }
    }
}
