#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A connection to `usherd` that sends one request at a time with blocking system calls on the calling thread.
///
/// For short-lived programs that make a request or two and exit, such as `usher token` in a shell prompt or a script:
/// `UsherClient` starts an event loop and its threads, which costs more than the whole exchange. This type starts
/// nothing: it connects, writes a line and reads lines until the answer, all on the caller's thread, so it must not be
/// used on a thread that other work shares (an event loop, Swift's cooperative pool in a server). It cannot receive
/// events; use `UsherClient` to subscribe. Errors are the same as `UsherClient`'s.
///
/// ```swift
/// let connection = try BlockingConnection(to: SocketLocation.resolve())
/// let token = try connection.send(AccessTokenRequest()).accessToken
/// ```
public final class BlockingConnection {
    /// Where this connection is connected.
    public let location: SocketLocation

    private let descriptor: Int32
    private let maximumLineLength: Int
    private var nextID: Int64 = 1
    /// Bytes read past the end of the last line.
    private var buffered: [UInt8] = []
    /// Set once the connection failed; every later call fails with it.
    private var failure: UsherClientError?

    /// Connects to the daemon at `location`.
    ///
    /// - Throws: `UsherClientError.cannotConnect` when the socket cannot be connected.
    public init(
        to location: SocketLocation,
        maximumLineLength: Int = UsherClient.defaultMaximumLineLength
    ) throws(UsherClientError) {
        self.location = location
        self.maximumLineLength = maximumLineLength
        let descriptor = try Self.connectedDescriptor(to: location)
        self.descriptor = descriptor
    }

    deinit {
        close(self.descriptor)
    }

    /// A socket connected to `location`, blocking, close-on-exec: a program that runs another one keeps its
    /// connection to itself, and usherd identifies a program only through a connection it holds close-on-exec
    /// (docs/least-privilege.md). `UsherClient` connects through this too, then hands the socket to NIO.
    static func connectedDescriptor(to location: SocketLocation) throws(UsherClientError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(location.path.utf8)
        // One byte stays for the terminating NUL, as NIO requires too.
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw .cannotConnect(location, .pathTooLong)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .cannotConnect(location, ConnectFailure(errno: errno)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(descriptor)
            throw .cannotConnect(location, ConnectFailure(errno: code))
        }
        return descriptor
    }

    /// Sends a typed request and waits for its decoded result.
    ///
    /// - Throws: `ResponseError` when the daemon answers with an error; `UsherClientError` when the connection fails
    ///   or the result does not decode.
    public func send<Request: UsherRequest>(_ request: Request) throws -> Request.Result {
        try UsherClient.decodeResult(
            of: Request.self,
            from: try self.exchange(method: Request.method.rawValue, params: request.params.values)
        )
    }

    /// Sends a typed request and returns its decoded result together with the JSON it was decoded from.
    public func sendReturningJSON<Request: UsherRequest>(
        _ request: Request
    ) throws -> (result: Request.Result, json: JSONValue) {
        let line = try self.exchange(method: Request.method.rawValue, params: request.params.values)
        return (try UsherClient.decodeResult(of: Request.self, from: line), try UsherClient.decodeJSON(from: line))
    }

    /// Sends any method with any parameters and returns the result as JSON.
    public func call(method: String, params: [String: JSONValue] = [:]) throws -> JSONValue {
        try UsherClient.decodeJSON(from: try self.exchange(method: method, params: params))
    }

    /// Sends a request and waits for its response line, whose result is left undecoded for the caller.
    private func exchange(method: String, params: [String: JSONValue]) throws -> IncomingLine {
        if let failure = self.failure { throw failure }
        let id = self.nextID
        self.nextID += 1
        do {
            try self.write(LineCodec.encode(Request(id: .int(id), method: method, params: Params(params))))
            while true {
                let line = try self.readLine()
                switch try UsherClient.decodeLine(line) {
                case nil, .event:
                    // Not subscribed, so no event is expected; one is skipped as `UsherClient` would deliver it.
                    continue
                case .response(let responseID, let result):
                    if let mismatch = UsherClient.mismatch(id: responseID, result: result, expected: id) {
                        throw mismatch
                    }
                    return try result.get()
                }
            }
        } catch let error as UsherClientError {
            self.failure = error
            throw error
        }
    }

    /// The connection's socket, for `poll(2)` beside other descriptors: it is readable when the daemon wrote an
    /// event (to a lease holder: `switch_pending`, `lease_broken`) or closed the connection. Read with `nextEvent`.
    public var fileDescriptor: Int32 { self.descriptor }

    /// Whether a whole line the daemon sent is already read and waiting: `poll` on `fileDescriptor` would not see it.
    public var hasBufferedLine: Bool { self.buffered.contains(UInt8(ascii: "\n")) }

    /// The next event the daemon sent on this connection (blocking until a whole line is there).
    ///
    /// - Throws: `UsherClientError.connectionClosed` when the daemon closed the connection.
    public func nextEvent() throws(UsherClientError) -> Event {
        if let failure = self.failure { throw failure }
        do {
            while true {
                let line = try self.readLine()
                if case .event(let event)? = try UsherClient.decodeLine(line) { return event }
            }
        } catch {
            self.failure = error
            throw error
        }
    }

    private func write(_ bytes: [UInt8]) throws(UsherClientError) {
        var offset = 0
        while offset < bytes.count {
            // A daemon that went away is an error here, not SIGPIPE.
            let written = bytes.withUnsafeBytes {
                sendWithoutSignal(self.descriptor, $0.baseAddress! + offset, $0.count - offset)
            }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw .connectionClosed }
            offset += written
        }
    }

    /// The next line, without its terminator (`\n` or `\r\n`).
    private func readLine() throws(UsherClientError) -> ArraySlice<UInt8> {
        var scanned = 0
        while true {
            if let newline = self.buffered[scanned...].firstIndex(of: UInt8(ascii: "\n")) {
                var line = self.buffered[..<newline]
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                defer { self.buffered.removeSubrange(...newline) }
                return ArraySlice(Array(line))
            }
            scanned = self.buffered.count
            let pending = self.buffered.last == UInt8(ascii: "\r") ? scanned - 1 : scanned
            guard pending <= self.maximumLineLength else {
                throw .malformedResponse("a line is longer than the client accepts")
            }
            let count = try self.receive()
            guard count > 0 else { throw .connectionClosed }
        }
    }

    /// Reads what is available into `buffered`; 0 at the end of the stream.
    private func receive() throws(UsherClientError) -> Int {
        let chunk = 64 * 1024
        while true {
            let start = self.buffered.count
            self.buffered.append(contentsOf: repeatElement(0, count: chunk))
            let count = self.buffered.withUnsafeMutableBytes {
                recv(self.descriptor, $0.baseAddress! + start, chunk, 0)
            }
            self.buffered.removeSubrange((start + max(count, 0))...)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw .connectionClosed }
            return count
        }
    }
}

/// `send(2)` without SIGPIPE; at file scope, where `send` is not `BlockingConnection.send(_:)`.
private func sendWithoutSignal(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    send(descriptor, bytes, count, Int32(MSG_NOSIGNAL))
}
