/// A stable, machine-readable error code. Codes are part of the protocol: they are never renamed, and docs/protocol.md
/// lists every one.
///
/// This is an open set (a struct, not an enum) so that an older client can still decode a code that a newer daemon
/// introduces.
public struct ErrorCode: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { self.rawValue }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.rawValue)
    }

    // The interface's errors (varlink/io.usher.Session.varlink) are generated (`interfaceErrors`); these two are
    // the newline-delimited protocol's own, which Varlink reports with its service errors
    // (`org.varlink.service.MethodNotFound`, `InvalidParameter`).
    public static let unknownMethod = ErrorCode("unknown_method")
    public static let invalidParams = ErrorCode("invalid_params")

    /// Every code the daemon sends, in the order docs/protocol.md lists them.
    public static let all: [ErrorCode] =
        [.invalidRequest, .unknownMethod, .invalidParams] + interfaceErrors.filter { $0 != .invalidRequest }
}

/// The wire form of every error: `{"code": "<stable_code>", "message": "<for humans>"}`, plus `"data": {...}` for the
/// codes that carry details a program acts on (`rate_limited`: `{"retry_after": <seconds>}`).
///
/// `data` is absent, not null, for every other code, so error lines of older versions are unchanged and older clients
/// (which ignore unknown keys) read the new ones.
public struct ResponseError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    /// Machine-readable details of this error, as JSON-RPC's `error.data`; nil for most codes.
    public var data: [String: JSONValue]?
    /// For `invalid_params`: the parameter at fault (`ParamsDecoder` sets it). Not sent on the newline-delimited
    /// socket, whose message names it; the Varlink face sends it as `InvalidParameter`'s `parameter`. Not part of
    /// equality: two errors with the same code, message and data are the same error.
    public var parameter: String?

    public init(_ code: ErrorCode, _ message: String) {
        self.init(code, message, data: nil)
    }

    public init(_ code: ErrorCode, _ message: String, data: [String: JSONValue]?) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// A `rate_limited` error: try again in `retryAfter` whole seconds.
    public static func rateLimited(_ message: String, retryAfter seconds: Int) -> ResponseError {
        ResponseError(.rateLimited, message, data: ["retry_after": .int(Int64(seconds))])
    }

    /// `data.retry_after`: how many seconds to wait before trying again (`rate_limited`).
    public var retryAfter: Int? {
        guard case .int(let seconds)? = self.data?["retry_after"] else { return nil }
        return Int(exactly: seconds)
    }

    public var description: String { "\(self.message) (\(self.code.rawValue))" }

    private enum CodingKeys: String, CodingKey { case code, message, data }

    public static func == (left: ResponseError, right: ResponseError) -> Bool {
        left.code == right.code && left.message == right.message && left.data == right.data
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.code)
        hasher.combine(self.message)
        hasher.combine(self.data)
    }
}
