// FoundationEssentials, not Foundation: the CLI links this module, and Foundation would bring ICU and its start-up
// cost into every `usher` run. JSONEncoder, JSONDecoder and Data are the same types in both.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The protocol version this module speaks (`hello` reports it).
public let protocolVersion = 1

/// A request's `id`: echoed back verbatim in its response. JSON allows a string or a number.
public enum RequestID: Sendable, Hashable, Codable, CustomStringConvertible {
    case int(Int64)
    /// A number id a client built as a `Double` (the daemon reads every number that is not a 64-bit integer as
    /// `number`).
    case double(Double)
    case string(String)
    /// A number id that is not a 64-bit integer (`1.5`, `1e30`, `123456789012345678901234567890`, `-0`), as the
    /// exact text it was sent in: the answer echoes that text byte for byte, so a client whose JSON library keeps
    /// big numbers exactly finds its id again. `LineCodec` and `WireWriter` write the text; the `Codable` conformance
    /// (which cannot write a number's text) writes the nearest `Double`.
    case number(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let int = try? container.decode(Int64.self) {
            self = .int(int)
        } else if let double = try? container.decode(Double.self) {
            self = .double(double)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .number(let text): try container.encode(Double(text) ?? 0)
        }
    }

    public var description: String {
        switch self {
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .string(let value): value
        case .number(let text): text
        }
    }
}

/// Every method of protocol v1.
public enum Method: String, Sendable, Hashable, CaseIterable, Codable {
    case hello
    case providers
    case register
    case login
    case currentUser = "current_user"
    case listUsers = "list_users"
    case switchUser = "switch_user"
    case logout
    case removeUser = "remove_user"
    case accessToken = "access_token"
    case refresh
    case createAPIKey = "create_api_key"
    case listAPIKeys = "list_api_keys"
    case deleteAPIKey = "delete_api_key"
    case jwks
    case subscribe
    case status
    case loginBegin = "login_begin"
    case loginWait = "login_wait"
    case listSeats = "list_seats"
    case inhibit
    case release
    case listLeases = "list_leases"
    case changePassword = "change_password"
    case linkCredentials = "link_credentials"
    case unlinkIdentity = "unlink_identity"
    case deleteUser = "delete_user"
    case resetPassword = "reset_password"
    case confirmUser = "confirm_user"
    case resendConfirmation = "resend_confirmation"
    case requestPasswordReset = "request_password_reset"
    case completePasswordReset = "complete_password_reset"
    case refreshProfile = "refresh_profile"
    case updateProfile = "update_profile"
    case dpopProof = "dpop_proof"
    case lockSeat = "lock_seat"
    case unlock
    case setPIN = "set_pin"
    case openSession = "open_session"
    case closeSession = "close_session"
    case userStatus = "user_status"
}

/// A request as read off the wire, before its parameters are interpreted.
public struct Request: Sendable, Hashable {
    public var id: RequestID?
    public var method: String
    public var params: Params

    public init(id: RequestID?, method: String, params: Params = Params()) {
        self.id = id
        self.method = method
        self.params = params
    }
}

/// A request line whose envelope has been read (see `LineCodec.decodeHead`): its id and method, with `params` not yet
/// decoded, so that a server can check the method and the sender's permission before it spends anything on them.
public struct RequestHead: Sendable, Hashable {
    public var id: RequestID?
    public var method: String
    /// The `params` object as it was sent (already checked: valid JSON within the limits); nil when absent or null.
    var paramsBytes: [UInt8]?

    init(id: RequestID?, method: String, paramsBytes: [UInt8]?) {
        self.id = id
        self.method = method
        self.paramsBytes = paramsBytes
    }

    /// Decodes `params`. A value that is valid JSON grammar but not representable (a number out of range, a lone
    /// UTF-16 surrogate) makes the line invalid, as it always did.
    public func decodeParams() throws(LineCodec.DecodingFailure) -> Params {
        guard let bytes = self.paramsBytes else { return Params() }
        if let flat = bytes.withUnsafeBufferPointer(FlatParams.parse) { return Params(flat) }
        guard case .object(let values)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            throw LineCodec.DecodingFailure(
                id: nil,
                error: ResponseError(.invalidRequest, "the line is not valid JSON")
            )
        }
        return Params(values)
    }

    /// A top-level string member of `params`, read without decoding the rest (for the record of a refused request).
    public func peekParam(_ key: String) -> String? {
        guard let bytes = self.paramsBytes else { return nil }
        return bytes.withUnsafeBufferPointer { buffer in
            guard
                let found = try? JSONScanner.scan(
                    buffer,
                    keys: [Array(key.utf8)],
                    maximumDepth: .max,
                    maximumMembers: .max
                ),
                let value = found.found[0], value.kind == .string
            else { return nil }
            return JSONScanner.string(buffer, value.range)
        }
    }
}

/// A typed request: the parameters of one method and the type of its result.
public protocol UsherRequest: Sendable {
    associatedtype Result: Codable & Sendable
    static var method: Method { get }
    /// Interprets wire parameters, throwing `invalid_params` with a precise message.
    init(params: Params) throws(ResponseError)
    /// The wire parameters of this request.
    var params: Params { get }
}

extension UsherRequest {
    public var request: Request { Request(id: nil, method: Self.method.rawValue, params: self.params) }
}

/// The `params` object of a request, with accessors that produce precise `invalid_params` errors.
public struct Params: Sendable, Hashable {
    public var values: [String: JSONValue]

    public init(_ values: [String: JSONValue] = [:]) {
        self.values = values
    }

    public subscript(key: String) -> JSONValue? {
        get { self.values[key] }
        set { self.values[key] = newValue }
    }

    /// Sets `key` unless `value` is nil (absent optionals are not sent).
    public mutating func set(_ key: String, _ value: String?) {
        if let value { self.values[key] = .string(value) }
    }

    public mutating func set(_ key: String, _ value: Int64?) {
        if let value { self.values[key] = .int(value) }
    }

    private func present(_ key: String) -> JSONValue? {
        switch self.values[key] {
        case .none, .some(.null): nil
        case .some(let value): value
        }
    }

    private static func wrongType(_ key: String, _ expected: String, _ value: JSONValue) -> ResponseError {
        ResponseError(.invalidParams, "params.\(key) must be \(expected), not \(value.typeName)")
    }

    public func requiredString(_ key: String) throws(ResponseError) -> String {
        guard let value = try self.optionalString(key) else {
            throw ResponseError(.invalidParams, "params.\(key) is required")
        }
        return value
    }

    public func optionalString(_ key: String) throws(ResponseError) -> String? {
        guard let value = self.present(key) else { return nil }
        guard case .string(let string) = value else { throw Self.wrongType(key, "a string", value) }
        return string
    }

    public func optionalInt(_ key: String, in range: ClosedRange<Int64>) throws(ResponseError) -> Int64? {
        guard let value = self.present(key) else { return nil }
        let int: Int64
        switch value {
        case .int(let value): int = value
        case .double(let value) where value.rounded() == value && abs(value) < 9e15: int = Int64(value)
        default: throw Self.wrongType(key, "an integer", value)
        }
        guard range.contains(int) else {
            throw ResponseError(
                .invalidParams,
                "params.\(key) must be between \(range.lowerBound) and \(range.upperBound)"
            )
        }
        return int
    }

    public func requiredObject(_ key: String) throws(ResponseError) -> [String: JSONValue] {
        guard let value = self.present(key) else { throw ResponseError(.invalidParams, "params.\(key) is required") }
        guard case .object(let object) = value else { throw Self.wrongType(key, "an object", value) }
        return object
    }

    public func optionalBool(_ key: String) throws(ResponseError) -> Bool? {
        guard let value = self.present(key) else { return nil }
        guard case .bool(let bool) = value else { throw Self.wrongType(key, "a boolean", value) }
        return bool
    }

    /// Sets `key` when `value` is true (a false flag is the default and is not sent).
    public mutating func set(_ key: String, flag value: Bool) {
        if value { self.values[key] = .bool(true) }
    }

    public func optionalStringArray(_ key: String) throws(ResponseError) -> [String]? {
        guard let value = self.present(key) else { return nil }
        guard case .array(let elements) = value else { throw Self.wrongType(key, "an array of strings", value) }
        var strings: [String] = []
        for element in elements {
            guard case .string(let string) = element else {
                throw Self.wrongType(key, "an array of strings", element)
            }
            strings.append(string)
        }
        return strings
    }
}
