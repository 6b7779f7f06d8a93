/// One Varlink call, as the UAPI.20 specification defines it: a JSON object with `method` (the interface's name and
/// the method's, `io.usher.Session.CurrentUser`), optional `parameters` (an object), and the optional flags `more`
/// (the caller accepts several replies), `oneway` (the caller wants no reply) and `upgrade`.
///
/// Decoded with the same scanner and limits as a request line (`LineCodec.decodeHead`): the envelope is read without
/// decoding the parameters, which the method's handler decodes once, into its typed request.
public struct VarlinkCall: Sendable, Hashable {
    /// The interface, everything before the method name's last dot.
    public var interface: String
    /// The method's name within its interface.
    public var member: String
    /// The `parameters` object as it was sent; nil when absent or null.
    public var parametersBytes: [UInt8]?
    public var more: Bool
    public var oneway: Bool
    public var upgrade: Bool

    /// The fully qualified method name, as sent.
    public var method: String { self.interface + "." + self.member }

    /// The same request in the terms of the newline-delimited protocol: no id (Varlink matches replies to calls by
    /// their order), the method's protocol name, and the parameters as they were sent.
    public func head(method: Method) -> RequestHead {
        RequestHead(id: nil, method: method.rawValue, paramsBytes: self.parametersBytes)
    }

    /// Decodes `parameters` (for a call the daemon answers itself, such as `org.varlink.service`'s).
    public func decodeParameters() throws(LineCodec.DecodingFailure) -> Params {
        try RequestHead(id: nil, method: self.method, paramsBytes: self.parametersBytes).decodeParams()
    }

    private static let envelopeKeys: [[UInt8]] = ["method", "parameters", "more", "oneway", "upgrade"].map {
        Array($0.utf8)
    }

    /// Decodes a call (one message, without its terminating NUL). Every failure is `invalid_request` (the envelope
    /// is malformed) or `invalid_params` (`parameters` is not an object).
    public static func decode(
        _ message: some Collection<UInt8>,
        maximumDepth: Int = 64,
        maximumMembers: Int = 512
    ) throws(ResponseError) -> VarlinkCall {
        let result: Result<VarlinkCall, ResponseError>? = message.withContiguousStorageIfAvailable { bytes in
            Result { () throws(ResponseError) in
                try Self.decode(bytes, maximumDepth: maximumDepth, maximumMembers: maximumMembers)
            }
        }
        if let result { return try result.get() }
        return try Array(message).withUnsafeBufferPointer { bytes throws(ResponseError) in
            try Self.decode(bytes, maximumDepth: maximumDepth, maximumMembers: maximumMembers)
        }
    }

    static func decode(
        _ bytes: UnsafeBufferPointer<UInt8>,
        maximumDepth: Int,
        maximumMembers: Int
    ) throws(ResponseError) -> VarlinkCall {
        func invalid(_ message: String) -> ResponseError { ResponseError(.invalidRequest, message) }
        let scanned = try LineCodec.scanEnvelope(
            bytes,
            keys: Self.envelopeKeys,
            maximumDepth: maximumDepth,
            maximumMembers: maximumMembers,
            names: ("call", "message")
        )
        guard let methodValue = scanned[0] else { throw invalid("method is required") }
        guard methodValue.kind == .string, let method = JSONScanner.string(bytes, methodValue.range) else {
            throw invalid("method must be a string, not \(methodValue.kind.typeName)")
        }
        // By bytes, not Characters: on the path of every call, and a dot is one byte in UTF-8.
        guard let dot = method.utf8.lastIndex(of: UInt8(ascii: ".")), dot != method.startIndex,
            method.utf8.index(after: dot) != method.endIndex
        else {
            throw invalid("method must be an interface name and a method name, such as io.usher.Session.CurrentUser")
        }
        var parameters: [UInt8]?
        if let found = scanned[1], found.kind != .null {
            guard found.kind == .object else {
                throw ResponseError(.invalidParams, "parameters must be an object, not \(found.kind.typeName)")
            }
            parameters = Array(bytes[found.range])
        }
        func flag(_ position: Int, _ name: String) throws(ResponseError) -> Bool {
            guard let found = scanned[position], found.kind != .null else { return false }
            guard found.kind == .boolean else { throw invalid("\(name) must be a boolean, not \(found.kind.typeName)") }
            return bytes[found.range.lowerBound] == UInt8(ascii: "t")
        }
        return VarlinkCall(
            interface: String(method[..<dot]),
            member: String(method[method.utf8.index(after: dot)...]),
            parametersBytes: parameters,
            more: try flag(2, "more"),
            oneway: try flag(3, "oneway"),
            upgrade: try flag(4, "upgrade")
        )
    }
}
