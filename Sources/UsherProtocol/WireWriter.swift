// FoundationEssentials, not Foundation: the CLI links this module (see LineCodec.swift).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes the answers of the hot read methods (`current_user`, `list_users`, `access_token`, `hello`) and of the
/// changes that answer with a user (`login`, `switch_user`) straight into bytes.
///
/// Not a JSON library: it writes exactly the few wire types below, byte for byte as `LineCodec` (Foundation's
/// `JSONEncoder` with sorted keys and unescaped slashes) writes them, which `WireWriterTests` checks value by value.
/// It exists because those answers are on every local program's hot path, and a list of 100,000 users must not take
/// seconds; every other answer still goes through `LineCodec`.
public struct WireWriter: Sendable {
    public var bytes: [UInt8]

    public init(capacity: Int = 256) {
        self.bytes = []
        self.bytes.reserveCapacity(capacity)
    }

    @inline(__always) mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { self.bytes.append(contentsOf: $0) }
    }

    mutating func integer(_ value: Int64) {
        if value < 0 {
            self.bytes.append(UInt8(ascii: "-"))
            // -(Int64.min) overflows; its magnitude fits in UInt64.
            self.unsigned(UInt64(bitPattern: 0 &- value))
        } else {
            self.unsigned(UInt64(value))
        }
    }

    private mutating func unsigned(_ value: UInt64) {
        var divisor: UInt64 = 1
        while divisor <= value / 10 { divisor *= 10 }
        while divisor > 0 {
            self.bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    mutating func bool(_ value: Bool) {
        if value { self.raw("true") } else { self.raw("false") }
    }

    /// A JSON string, escaped as `JSONEncoder` escapes it: `"` and `\`, the short forms `\b \f \n \r \t`, every other
    /// control character as `\u00XX`, and nothing else (slashes and non-ASCII stay as they are).
    mutating func string(_ value: String) {
        self.bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                self.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                switch byte {
                case 0x22: self.raw("\\\"")
                case 0x5C: self.raw("\\\\")
                case 0x08: self.raw("\\b")
                case 0x0C: self.raw("\\f")
                case 0x0A: self.raw("\\n")
                case 0x0D: self.raw("\\r")
                case 0x09: self.raw("\\t")
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    self.raw("\\u00")
                    self.bytes.append(hex[Int(byte >> 4)])
                    self.bytes.append(hex[Int(byte & 0x0F)])
                }
            }
            self.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        self.bytes.append(UInt8(ascii: "\""))
    }

    mutating func optional<Value>(_ value: Value?, _ write: (inout WireWriter, Value) -> Void) {
        if let value { write(&self, value) } else { self.raw("null") }
    }

    mutating func timestamp(_ value: Timestamp) {
        self.bytes.append(UInt8(ascii: "\""))
        value.appendRFC3339(to: &self.bytes)
        self.bytes.append(UInt8(ascii: "\""))
    }
}

extension UserInfo {
    /// This user as `LineCodec` encodes it.
    public func write(to writer: inout WireWriter) {
        writer.raw("{\"access_token_expires_at\":")
        writer.optional(self.accessTokenExpiresAt) { $0.timestamp($1) }
        writer.raw(",\"active\":")
        writer.bool(self.active)
        writer.raw(",\"created_at\":")
        writer.timestamp(self.createdAt)
        writer.raw(",\"custom_data\":")
        writer.bytes.append(contentsOf: self.customData.json.utf8)
        writer.raw(",\"email\":")
        writer.optional(self.email) { $0.string($1) }
        writer.raw(",\"id\":")
        writer.string(self.id)
        writer.raw(",\"identities\":[")
        Self.write(Identity(provider: self.provider, kind: self.kind, subject: self.subject), to: &writer)
        for identity in self.otherIdentities {
            writer.raw(",")
            Self.write(identity, to: &writer)
        }
        writer.raw("],\"kind\":")
        writer.string(self.kind)
        writer.raw(",\"last_active_at\":")
        writer.optional(self.lastActiveAt) { $0.timestamp($1) }
        writer.raw(",\"last_login_at\":")
        writer.optional(self.lastLoginAt) { $0.timestamp($1) }
        writer.raw(",\"last_refresh_error\":")
        writer.optional(self.lastRefreshError) { $0.string($1.rawValue) }
        writer.raw(",\"name\":")
        writer.optional(self.name) { $0.string($1) }
        writer.raw(",\"next_refresh_at\":")
        writer.optional(self.nextRefreshAt) { $0.timestamp($1) }
        writer.raw(",\"profile\":")
        writer.bytes.append(contentsOf: self.profile.json.utf8)
        writer.raw(",\"provider\":")
        writer.string(self.provider)
        writer.raw(",\"refresh_token_expires_at\":")
        writer.optional(self.refreshTokenExpiresAt) { $0.timestamp($1) }
        writer.raw(",\"retry_at\":")
        writer.optional(self.retryAt) { $0.timestamp($1) }
        writer.raw(",\"state\":")
        writer.string(self.state.rawValue)
        writer.raw(",\"token_state\":")
        writer.string(self.tokenState.rawValue)
        writer.raw("}")
    }

    private static func write(_ identity: Identity, to writer: inout WireWriter) {
        writer.raw("{\"kind\":")
        writer.string(identity.kind)
        writer.raw(",\"provider\":")
        writer.string(identity.provider)
        writer.raw(",\"subject\":")
        writer.string(identity.subject)
        writer.raw("}")
    }
}

extension CurrentUserRequest.Result {
    /// This answer as `LineCodec` encodes it (without the envelope).
    public func write(to writer: inout WireWriter) {
        self.write(to: &writer, withLock: true)
    }

    /// `withLock`: whether the answer says `locked` (`current_user`'s does; `UserResult`'s, of a change, does not).
    fileprivate func write(to writer: inout WireWriter, withLock: Bool) {
        writer.raw("{\"generation\":")
        writer.integer(self.generation)
        if withLock { writer.raw(self.locked ? ",\"locked\":true" : ",\"locked\":false") }
        if let seat = self.seat {
            writer.raw(",\"seat\":")
            writer.string(seat)
        }
        writer.raw(",\"user\":")
        writer.optional(self.user) { $1.write(to: &$0) }
        writer.raw("}")
    }
}

extension UserResult {
    /// This answer (`login`, `switch_user` and the other changes of a user) as `LineCodec` encodes it (without the
    /// envelope): the shape of `current_user`'s, with a user always present.
    public func write(to writer: inout WireWriter) {
        CurrentUserRequest.Result(generation: self.generation, seat: self.seat, user: self.user, locked: false)
            .write(to: &writer, withLock: false)
    }
}

extension HelloRequest.Result {
    /// This answer as `LineCodec` encodes it (without the envelope): `hello` is the first call of every client.
    public func write(to writer: inout WireWriter) {
        writer.raw("{\"peer\":{\"gid\":")
        writer.integer(Int64(self.peer.gid))
        writer.raw(",\"pid\":")
        writer.integer(Int64(self.peer.pid))
        writer.raw(",\"uid\":")
        writer.integer(Int64(self.peer.uid))
        writer.raw("},\"permissions\":[")
        for (index, permission) in self.permissions.enumerated() {
            if index > 0 { writer.raw(",") }
            writer.string(permission)
        }
        writer.raw("]")
        if let program = self.program {
            writer.raw(",\"program\":{\"executable\":")
            writer.optional(program.executable) { $0.string($1) }
            if let digest = program.executableSHA256 {
                writer.raw(",\"executable_sha256\":")
                writer.string(digest)
            }
            writer.raw(",\"identified\":")
            writer.bool(program.identified)
            writer.raw(",\"unit\":")
            writer.optional(program.unit) { $0.string($1) }
            writer.raw(",\"user_unit\":")
            writer.optional(program.userUnit) { $0.string($1) }
            writer.raw("}")
        }
        writer.raw(",\"protocol\":")
        writer.integer(Int64(self.protocol))
        writer.raw(",\"server\":")
        writer.string(self.server)
        writer.raw(",\"version\":")
        writer.string(self.version)
        writer.raw("}")
    }
}

extension AccessTokenRequest.Result {
    /// This answer as `LineCodec` encodes it (without the envelope).
    public func write(to writer: inout WireWriter) {
        writer.raw("{\"access_token\":")
        writer.string(self.accessToken)
        if let audience = self.audience {
            writer.raw(",\"audience\":")
            writer.string(audience)
        }
        writer.raw(",\"expires_at\":")
        writer.timestamp(self.expiresAt)
        writer.raw(",\"expires_in\":")
        writer.integer(self.expiresIn)
        if let scopes = self.scopes {
            writer.raw(",\"scopes\":[")
            for (index, scope) in scopes.enumerated() {
                if index > 0 { writer.raw(",") }
                writer.string(scope)
            }
            writer.raw("]")
        }
        writer.raw(",\"token_type\":")
        writer.string(self.tokenType)
        writer.raw(",\"user_id\":")
        writer.string(self.userID)
        writer.raw("}")
    }
}

extension ListUsersRequest.Result {
    /// This answer as `LineCodec` encodes it (without the envelope).
    public func write(to writer: inout WireWriter) {
        writer.raw("{\"generation\":")
        writer.integer(self.generation)
        if let next = self.next {
            writer.raw(",\"next\":")
            writer.string(next)
        }
        writer.raw(",\"users\":[")
        for (index, user) in self.users.enumerated() {
            if index > 0 { writer.raw(",") }
            user.write(to: &writer)
        }
        writer.raw("]}")
    }
}

extension RequestID {
    /// The id as the envelope writes it; nil for a kind the writer leaves to `LineCodec` (a double).
    func write(to writer: inout WireWriter) -> Bool {
        switch self {
        case .int(let value): writer.integer(value)
        case .string(let value): writer.string(value)
        // The text the client sent, already checked as a JSON number: echoed as it came.
        case .number(let text): writer.bytes.append(contentsOf: text.utf8)
        case .double: return false
        }
        return true
    }
}

extension WireWriter {
    /// A whole response line, `{"id":…,"result":…}\n`, with the result written by `writeResult` straight after the
    /// envelope's head: no intermediate buffer.
    public static func responseLine(
        id: RequestID?,
        capacity: Int = 512,
        writeResult: (inout WireWriter) -> Void
    ) -> [UInt8] {
        var writer = WireWriter(capacity: capacity)
        writer.raw("{\"id\":")
        if let id {
            guard id.write(to: &writer) else {
                var result = WireWriter(capacity: capacity)
                writeResult(&result)
                return Self.responseLine(id: id, resultJSON: result.bytes)
            }
        } else {
            writer.raw("null")
        }
        writer.raw(",\"result\":")
        writeResult(&writer)
        writer.raw("}\n")
        return writer.bytes
    }

    /// A whole response line: `{"id":…,"result":…}\n` around a result already written by `write(to:)`.
    public static func responseLine(id: RequestID?, resultJSON: [UInt8]) -> [UInt8] {
        var writer = WireWriter(capacity: resultJSON.count + 32)
        writer.raw("{\"id\":")
        if let id {
            guard id.write(to: &writer) else {
                let value = (try? JSONDecoder().decode(JSONValue.self, from: Data(resultJSON))) ?? .null
                return LineCodec.encodeResult(id: id, value)
            }
        } else {
            writer.raw("null")
        }
        writer.raw(",\"result\":")
        writer.bytes.append(contentsOf: resultJSON)
        writer.raw("}\n")
        return writer.bytes
    }
}

/// A `list_users` answer written a piece at a time: a list of 100,000 users is tens of megabytes, and a connection
/// should hold a few pieces of it, not the whole answer (the server writes the next piece when the socket takes the
/// last). The pieces are written from the result, in the framing of the socket that asked (`framing`).
public struct ListLineChunks: IteratorProtocol, Sendable {
    /// How the answer is framed around the result.
    public enum Framing: Sendable {
        /// The newline-delimited socket's response line, `{"id":…,"result":…}\n`.
        case line
        /// A Varlink reply, `{"parameters":…}` and its NUL.
        case varlink
    }

    private let id: RequestID?
    private let result: ListUsersRequest.Result
    private let usersPerChunk: Int
    private var position = 0
    private var done = false
    public var framing = Framing.line

    public init(id: RequestID?, result: ListUsersRequest.Result, usersPerChunk: Int = 256) {
        self.id = id
        self.result = result
        self.usersPerChunk = max(1, usersPerChunk)
    }

    /// The next piece of the line; the pieces together are exactly `LineCodec.encodeResult(id:result)`.
    public mutating func next() -> [UInt8]? {
        guard !self.done else { return nil }
        if case .double = self.id, self.framing == .line {
            // An id the writer leaves to LineCodec: the whole line at once.
            self.done = true
            return LineCodec.encodeResult(id: self.id, self.result)
        }
        var writer = WireWriter(capacity: self.usersPerChunk * 600)
        if self.position == 0 {
            // The envelope and everything before the first user, as `responseLine` writes it.
            var head = WireWriter(capacity: 64)
            head.raw("{\"generation\":")
            head.integer(self.result.generation)
            if let cursor = self.result.next {
                head.raw(",\"next\":")
                head.string(cursor)
            }
            head.raw(",\"users\":[")
            switch self.framing {
            case .line:
                var line = WireWriter.responseLine(id: self.id, resultJSON: head.bytes)
                // `responseLine` closes the envelope (`}\n`); the users and the closing come in later pieces.
                line.removeLast(2)
                writer.bytes = line
            case .varlink:
                writer.raw("{\"parameters\":")
                writer.bytes.append(contentsOf: head.bytes)
            }
        }
        let end = min(self.position + self.usersPerChunk, self.result.users.count)
        for index in self.position..<end {
            if index > 0 { writer.raw(",") }
            self.result.users[index].write(to: &writer)
        }
        self.position = end
        if end == self.result.users.count {
            writer.raw("]}}")
            writer.bytes.append(self.framing == .line ? UInt8(ascii: "\n") : 0)
            self.done = true
        }
        return writer.bytes
    }
}
