/// A request to an identity provider: a discovery document, a token endpoint, a JWK set, userinfo.
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
        case delete = "DELETE"
    }

    public var method: Method
    /// An `http` or `https` URL; the transport refuses every other scheme.
    public var url: String
    /// Sent in order, as given.
    public var headers: [(name: String, value: String)]
    /// The body of a `POST`; none is an empty body.
    public var body: [UInt8]
    /// Whether a redirect is followed: only ever for a `GET`, and not for a request that proves a credential (the
    /// redirected host never sees it, so its answer proves nothing); a redirect not followed is
    /// `HTTPTransportError.redirected`.
    public var followsRedirects: Bool

    public init(
        _ method: Method,
        _ url: String,
        headers: [(name: String, value: String)] = [],
        body: [UInt8] = [],
        followsRedirects: Bool = true
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.followsRedirects = followsRedirects && method == .get
    }
}

/// A provider's answer, after redirects (`GET` only).
public struct HTTPResponse: Sendable {
    public var status: Int
    /// The headers of the last response, in order; names as the server spelled them.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header of that name, compared without regard to case.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return self.headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// Why a request got no answer. Messages come from usher and libcurl's error text, which names hosts and ports and
/// never a request's headers or body.
public enum HTTPTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The name did not resolve, or nothing accepted the connection.
    case unreachable(String)
    /// The request's time limit passed.
    case timedOut(String)
    /// The TLS handshake failed, or the server's certificate is not trusted.
    case tls(String)
    /// The answer's body is longer than the request allowed.
    case tooLarge(limit: Int)
    /// The server redirected a request that is not followed (only a `GET` is, and not every one).
    case redirected(status: Int)
    /// Anything else: a malformed answer, a refused scheme, a server that closed the connection.
    case failed(String)
    /// The task that waited for the answer was cancelled.
    case cancelled
    /// The transport was shut down before the answer came.
    case shutDown
    /// The transport cannot make requests at all: libcurl cannot be loaded (the loader's reason), or its thread or
    /// multi handle cannot be made.
    case unavailable(String)

    public var description: String {
        switch self {
        case .unreachable(let detail): "unreachable (\(detail))"
        case .timedOut(let detail): "timed out (\(detail))"
        case .tls(let detail): "TLS failed (\(detail))"
        case .tooLarge(let limit): "the answer is longer than \(limit) bytes"
        case .redirected(let status): "redirected (HTTP \(status))"
        case .failed(let detail): detail
        case .cancelled: "the request was cancelled"
        case .shutDown: "the daemon is shutting down"
        case .unavailable(let detail): "usherd cannot make HTTP requests: \(detail)"
        }
    }
}
