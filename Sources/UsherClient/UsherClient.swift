import NIOCore
import NIOPosix
import Synchronization
import UsherFraming
@_exported import UsherProtocol

/// A connection to `usherd`.
///
/// A client exists only inside `withConnection`: the scope opens the socket, reads the daemon's lines for as long as
/// it runs, and closes the connection when it ends. Requests may be sent from several tasks at once; each gets its own
/// response (the daemon answers in request order, and the client checks every response's id against the request
/// it expects next).
///
/// ```swift
/// let user = try await UsherClient.withConnection { client in
///     try await client.currentUser().user
/// }
/// ```
public final class UsherClient: Sendable {
    /// The longest line accepted from the daemon: generous, since a JWKS or a user list can be large.
    public static let defaultMaximumLineLength = 16 * 1024 * 1024

    /// Where this client is connected.
    public let location: SocketLocation

    /// The events the daemon pushes after `subscribe`, in order.
    ///
    /// The stream finishes when the connection closes (the daemon stopped or closed it, or the scope ended); then
    /// `closeReason` says why. It buffers without bound, so a subscriber should keep reading it, and it supports a
    /// single consumer. Events of a kind this client does not know are skipped.
    public let events: AsyncStream<Event>

    private let eventSink: AsyncStream<Event>.Continuation
    private let outgoing: AsyncStream<[UInt8]>.Continuation
    private let state = Mutex(State())

    private struct State {
        /// The id of the next request; ids increase by one per request sent.
        var nextID: Int64 = 1
        /// Identifies a call for its cancellation handler, which runs before the call may have an id.
        var nextTicket: UInt64 = 0
        /// Requests written and not yet answered, oldest first: the daemon answers in this order.
        var pending: [Pending] = []
        /// Set once the connection is closed; every later call fails with it.
        var closeReason: UsherClientError?
    }

    private struct Pending {
        var id: Int64
        var ticket: UInt64
        /// Nil when the caller was cancelled: the response still arrives, in its turn, and is dropped. Resumed with
        /// the response line, whose result the caller decodes into the type it expects.
        var continuation: CheckedContinuation<IncomingLine, any Error>?
    }

    private init(location: SocketLocation, outgoing: AsyncStream<[UInt8]>.Continuation) {
        self.location = location
        self.outgoing = outgoing
        (self.events, self.eventSink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
    }

    /// Why the connection closed, or nil while it is open.
    public var closeReason: UsherClientError? {
        self.state.withLock { $0.closeReason }
    }

    // MARK: - Connecting

    /// Connects to the daemon, runs `body` with the connection, and closes it when `body` returns or throws.
    ///
    /// - Parameters:
    ///   - socketPath: the socket to connect to; when nil, it is resolved as `SocketLocation.resolve()` describes.
    ///   - body: the work to do with the connection. The client must not be used after it returns.
    /// - Throws: `UsherClientError.cannotConnect` when the socket cannot be connected, or what `body` throws.
    public static func withConnection<Result>(
        socketPath: String? = nil,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (UsherClient) async throws -> sending Result
    ) async throws -> sending Result {
        try await self.withConnection(to: SocketLocation.resolve(explicitPath: socketPath), body)
    }

    /// Connects to the daemon at `location`, runs `body` with the connection, and closes it when `body` returns or
    /// throws.
    ///
    /// - Parameters:
    ///   - location: the socket to connect to.
    ///   - maximumLineLength: the longest line accepted from the daemon; a longer one closes the connection.
    ///   - body: the work to do with the connection. The client must not be used after it returns.
    /// - Throws: `UsherClientError.cannotConnect` when the socket cannot be connected, or what `body` throws.
    public static func withConnection<Result>(
        to location: SocketLocation,
        maximumLineLength: Int = UsherClient.defaultMaximumLineLength,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (UsherClient) async throws -> sending Result
    ) async throws -> sending Result {
        let channel: NIOAsyncChannel<LineFrame, [UInt8]>
        // Connected here, close-on-exec (NIO's own sockets are not): a program that runs another keeps its connection
        // to itself, and usherd identifies programs only through connections they hold close-on-exec. Connecting a
        // Unix socket does not wait for the daemon unless its backlog is full; on the thread pool all the same.
        let descriptor: Int32
        do {
            descriptor = try await NIOThreadPool.singleton.runIfActive {
                try BlockingConnection.connectedDescriptor(to: location)
            }
        } catch let error as UsherClientError {
            throw error
        } catch {
            throw UsherClientError.cannotConnect(location, ConnectFailure(error))
        }
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .withConnectedSocket(descriptor) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(LineFrameDecoder(maximumLineLength: maximumLineLength))
                        )
                        try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(LineFrameEncoder()))
                        return try NIOAsyncChannel<LineFrame, [UInt8]>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw UsherClientError.cannotConnect(location, ConnectFailure(error))
        }

        return try await channel.executeThenClose { inbound, outbound in
            let (lines, outgoing) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
            let client = UsherClient(location: location, outgoing: outgoing)
            // The reader and the writer run as child tasks for as long as `body` does. Neither throws: each records
            // why the connection ended in `close(with:)`. Leaving the scope cancels and awaits both, which ends the
            // reader's wait for the next line. (`async let` rather than a task group, so that `body` can return a
            // value that is not `Sendable`.)
            async let _ = client.writeRequests(lines, to: outbound)
            async let _ = client.readLines(from: inbound)
            do {
                let result = try await body(client)
                client.close(with: .connectionClosed)
                return result
            } catch {
                client.close(with: .connectionClosed)
                throw error
            }
        }
    }

    // MARK: - Requests

    /// Sends a typed request and returns its decoded result.
    ///
    /// - Throws: `ResponseError` when the daemon answers with an error; `UsherClientError` when the connection fails
    ///   or the result does not decode; `CancellationError` when the calling task is cancelled while waiting.
    public func send<Request: UsherRequest>(_ request: Request) async throws -> Request.Result {
        let line = try await self.exchange(method: Request.method.rawValue, params: request.params.values)
        return try Self.decodeResult(of: Request.self, from: line)
    }

    /// Sends a typed request and returns its decoded result together with the JSON it was decoded from, for tools
    /// that print what the daemon answered as it is. (The result is decoded twice, once into each form, both from
    /// the line's bytes: `send` decodes it once.)
    public func sendReturningJSON<Request: UsherRequest>(
        _ request: Request
    ) async throws -> (result: Request.Result, json: JSONValue) {
        let line = try await self.exchange(method: Request.method.rawValue, params: request.params.values)
        return (try Self.decodeResult(of: Request.self, from: line), try Self.decodeJSON(from: line))
    }

    /// Decodes a response's result, from the line's bytes, into its typed form; a result of the wrong shape is
    /// `malformedResponse`.
    static func decodeResult<Request: UsherRequest>(
        of request: Request.Type,
        from line: IncomingLine
    ) throws(UsherClientError) -> Request.Result {
        do {
            return try line.decodeResult(as: Request.Result.self)
        } catch let error as DecodingError {
            throw .malformedResponse("the result of \(Request.method.rawValue): \(error.summary)")
        } catch {
            throw .malformedResponse("the result of \(Request.method.rawValue) could not be decoded")
        }
    }

    /// Decodes a response's result as JSON. The line passed `JSONScanner`'s grammar check, so this fails only for
    /// bytes that are not UTF-8.
    static func decodeJSON(from line: IncomingLine) throws(UsherClientError) -> JSONValue {
        do {
            return try line.decodeResult(as: JSONValue.self)
        } catch {
            throw .malformedResponse("a line from usherd: \((error as? DecodingError)?.summary ?? "not JSON")")
        }
    }

    /// Sends any method with any parameters and returns the result as JSON: for methods this library does not know
    /// yet, and for tools that relay requests.
    ///
    /// - Throws: `ResponseError` when the daemon answers with an error; `UsherClientError` when the connection fails;
    ///   `CancellationError` when the calling task is cancelled while waiting.
    public func call(method: String, params: [String: JSONValue] = [:]) async throws -> JSONValue {
        try Self.decodeJSON(from: try await self.exchange(method: method, params: params))
    }

    /// Sends a request and waits for its response line, whose result is left undecoded for the caller.
    ///
    /// - Throws: `ResponseError` when the daemon answers with an error; `UsherClientError` when the connection fails;
    ///   `CancellationError` when the calling task is cancelled while waiting.
    private func exchange(method: String, params: [String: JSONValue]) async throws -> IncomingLine {
        let ticket = self.state.withLock { state in
            state.nextTicket += 1
            return state.nextTicket
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let failure: (any Error)? = self.state.withLock { state in
                    if let reason = state.closeReason { return reason }
                    // Checked under the lock so that the cancellation handler either sees this request pending or
                    // finds the task cancelled here: a cancellation can never be missed.
                    if Task.isCancelled { return CancellationError() }
                    let id = state.nextID
                    state.nextID += 1
                    state.pending.append(Pending(id: id, ticket: ticket, continuation: continuation))
                    // Queued under the lock, so the order of the writes is the order of `pending`.
                    self.outgoing.yield(
                        LineCodec.encode(UsherProtocol.Request(id: .int(id), method: method, params: Params(params)))
                    )
                    return nil
                }
                if let failure { continuation.resume(throwing: failure) }
            }
        } onCancel: {
            let continuation = self.state.withLock { state -> CheckedContinuation<IncomingLine, any Error>? in
                guard let index = state.pending.firstIndex(where: { $0.ticket == ticket }) else { return nil }
                defer { state.pending[index].continuation = nil }
                return state.pending[index].continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    // MARK: - The connection's tasks

    /// Writes queued request lines in order until the queue finishes or a write fails.
    private func writeRequests(_ lines: AsyncStream<[UInt8]>, to outbound: NIOAsyncChannelOutboundWriter<[UInt8]>) async
    {
        for await line in lines {
            do {
                try await outbound.write(line)
            } catch {
                self.close(with: .connectionClosed)
                return
            }
        }
    }

    /// Reads the daemon's lines until the connection closes, or a line breaks the protocol.
    private func readLines(from inbound: NIOAsyncChannelInboundStream<LineFrame>) async {
        do {
            for try await frame in inbound {
                switch frame {
                case .line(let line):
                    if let failure = self.handle(line: line.readableBytesView) {
                        self.close(with: failure)
                        return
                    }
                case .tooLong:
                    self.close(with: .malformedResponse("a line is longer than the client accepts"))
                    return
                }
            }
        } catch {
            // A reset connection, or the scope ending (cancellation): either way the connection is over.
        }
        self.close(with: .connectionClosed)
    }

    /// Routes one line: an event to `events`, a response to the request waiting for it.
    ///
    /// - Returns: the error that ends the connection when the line breaks the protocol. Once a response cannot be
    ///   matched to its request, no later response can be trusted to belong to the request it seems to answer.
    private func handle(line: some Collection<UInt8>) -> UsherClientError? {
        let incoming: Incoming?
        do {
            incoming = try Self.decodeLine(line)
        } catch {
            return error
        }
        switch incoming {
        case nil:
            return nil
        case .event(let event):
            self.eventSink.yield(event)
            return nil
        case .response(let id, let result):
            let matched = self.state.withLock { state -> Result<Pending, UsherClientError> in
                guard let next = state.pending.first else {
                    return .failure(.malformedResponse("a response (id \(id.map { "\($0)" } ?? "null")) to no request"))
                }
                if let mismatch = Self.mismatch(id: id, result: result, expected: next.id) {
                    return .failure(mismatch)
                }
                state.pending.removeFirst()
                return .success(next)
            }
            switch matched {
            case .success(let request):
                request.continuation?.resume(with: result.mapError { $0 as any Error })
                return nil
            case .failure(let error):
                return error
            }
        }
    }

    /// A line from the daemon as a client needs it: an event decoded, or a response with its error decoded and its
    /// result left in the line's bytes, for the caller to decode into the type it expects.
    enum Incoming {
        case response(id: RequestID?, Result<IncomingLine, ResponseError>)
        case event(Event)
    }

    /// Reads a line from the daemon, decoding each part once; nil for an event this version does not know (or cannot
    /// decode), which is skipped: a newer daemon may send it. Any other line that does not decode breaks the protocol.
    static func decodeLine(_ line: some Collection<UInt8>) throws(UsherClientError) -> Incoming? {
        do {
            let incoming = try LineCodec.readIncoming(line)
            switch incoming.kind {
            case .event:
                return (try? incoming.decodeEvent()).map { .event($0) }
            case .error:
                return .response(id: incoming.id, .failure(try incoming.decodeError()))
            case .result:
                return .response(id: incoming.id, .success(incoming))
            }
        } catch {
            let reason = (error as? DecodingError)?.summary ?? "not a response"
            throw .malformedResponse("a line from usherd: \(reason)")
        }
    }

    /// Why a response cannot answer the request with id `expected`, or nil when it does. The daemon echoes our id;
    /// only an error about a line it could not read may carry a null id.
    static func mismatch(
        id: RequestID?,
        result: Result<IncomingLine, ResponseError>,
        expected: Int64
    ) -> UsherClientError? {
        switch (id, result) {
        case (.int(let received)?, _) where received == expected: return nil
        case (nil, .failure): return nil
        default:
            return .malformedResponse(
                "response id \(id.map { "\($0)" } ?? "null") does not match request id \(expected)"
            )
        }
    }

    /// Ends the connection: fails every waiting request with `reason`, finishes `events`, and stops the writer.
    /// Only the first reason counts.
    private func close(with reason: UsherClientError) {
        let waiting = self.state.withLock { state -> [Pending] in
            guard state.closeReason == nil else { return [] }
            state.closeReason = reason
            defer { state.pending.removeAll() }
            return state.pending
        }
        for request in waiting {
            request.continuation?.resume(throwing: reason)
        }
        self.eventSink.finish()
        self.outgoing.finish()
    }
}
