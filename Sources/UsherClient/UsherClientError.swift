import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure on the client's side of the connection. Errors the daemon answers with are thrown as `ResponseError`.
///
/// No case ever carries a request's parameters or a response's contents, so an error can be logged or printed without
/// leaking a password, token or key.
public enum UsherClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The daemon's socket could not be connected: where the client looked, and why it failed.
    case cannotConnect(SocketLocation, ConnectFailure)
    /// The daemon closed the connection (or it broke) before answering. Also thrown by calls made after the
    /// `withConnection` scope ended.
    case connectionClosed
    /// The daemon sent a line that is not a valid response or event, or a result of the wrong shape. The reason names
    /// what was wrong, never the line's contents.
    case malformedResponse(String)

    public var description: String {
        switch self {
        case .cannotConnect(let location, let failure):
            var text = "cannot reach usherd at \(location.path): \(failure)"
            let skipped = location.considered.filter { $0.path != location.path }
            if !skipped.isEmpty {
                let list = skipped.map { "\($0.path): \($0.skipReason ?? "skipped")" }.joined(separator: ", ")
                text += " (also looked for \(list))"
            }
            return text
        case .connectionClosed:
            return "usherd closed the connection"
        case .malformedResponse(let reason):
            return "malformed response from usherd: \(reason)"
        }
    }
}

/// Why connecting to the daemon's socket failed, derived from the `errno` of `connect(2)`.
public enum ConnectFailure: Sendable, Hashable, CustomStringConvertible {
    /// `ENOENT`: no socket at that path (the daemon is not running, or the path is wrong).
    case noSuchFile
    /// `ECONNREFUSED`: the path exists but nothing listens on it (a stale socket, or not a socket at all).
    case connectionRefused
    /// `EACCES`/`EPERM`: the socket or a directory on its path is not accessible to this user.
    case permissionDenied
    /// The path does not fit in `sockaddr_un.sun_path` (about 108 bytes).
    case pathTooLong
    /// Anything else, described in words (`strerror` for an `errno`).
    case other(String)

    /// Classifies an error thrown while connecting.
    public init(_ error: any Error) {
        if let error = error as? IOError {
            self.init(errno: error.errnoCode)
        } else if let error = error as? SocketAddressError, error == .unixDomainSocketPathTooLong {
            self = .pathTooLong
        } else if let error = error as? ChannelError, case .connectTimeout = error {
            self = .other("timed out")
        } else {
            self = .other(String(describing: error))
        }
    }

    /// Classifies an `errno` value.
    public init(errno code: Int32) {
        switch code {
        case ENOENT: self = .noSuchFile
        case ECONNREFUSED: self = .connectionRefused
        case EACCES, EPERM: self = .permissionDenied
        case ENAMETOOLONG: self = .pathTooLong
        default:
            let text = strerror(code).map { String(cString: $0) } ?? "error \(code)"
            self = .other(text.prefix(1).lowercased() + text.dropFirst())
        }
    }

    public var description: String {
        switch self {
        case .noSuchFile: "no such file"
        case .connectionRefused: "connection refused"
        case .permissionDenied: "permission denied"
        case .pathTooLong: "path too long for a Unix socket"
        case .other(let reason): reason
        }
    }
}

extension DecodingError {
    /// What is wrong, by position in the document and expected type: never the values themselves, which may be
    /// secrets (tokens, keys).
    var summary: String {
        func path(_ context: DecodingError.Context, appending key: (any CodingKey)? = nil) -> String {
            let keys = context.codingPath + (key.map { [$0] } ?? [])
            guard !keys.isEmpty else { return "the value" }
            return keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch self {
        case .keyNotFound(let key, let context):
            return "\(path(context, appending: key)) is missing"
        case .valueNotFound(let type, let context):
            return "\(path(context)) is null, expected \(type)"
        case .typeMismatch(let type, let context):
            return "\(path(context)) has the wrong type, expected \(type)"
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return "not valid JSON"
        case .dataCorrupted(let context):
            return "\(path(context)) is invalid"
        @unknown default:
            return "the value could not be decoded"
        }
    }
}
