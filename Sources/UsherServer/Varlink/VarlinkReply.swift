import UsherProtocol

/// Varlink replies, made from the answers the dispatcher gives the newline-delimited protocol.
///
/// A Varlink call is a second framing of the same request, not a second implementation: the connection hands the
/// dispatcher the request with no id, and turns its answer line into a reply here. A result line is
/// `{"id":null,"result":R}\n` (keys sorted, the id first, no raw newline inside: JSON escapes it), so its reply is
/// `{"parameters":R}` and a NUL, made by swapping the envelope's ends without reading R: the hot path's answers pass
/// through as they were encoded. Errors, rare, are decoded and written as Varlink's qualified error names.
enum VarlinkReply {
    /// How every result line from the dispatcher begins, for a request without an id.
    static let resultPrefix: [UInt8] = Array(#"{"id":null,"result":"#.utf8)
    private static let parametersPrefix: [UInt8] = Array(#"{"parameters":"#.utf8)
    private static let continuingPrefix: [UInt8] = Array(#"{"continues":true,"parameters":"#.utf8)

    /// The reply for an answer line: its result as the reply's parameters (with `continues` when more replies
    /// follow), or its error as a Varlink error.
    static func from(answer line: [UInt8], continues: Bool = false) -> [UInt8] {
        guard line.count > Self.resultPrefix.count + 1, line.starts(with: Self.resultPrefix) else {
            return Self.error(from: line)
        }
        let prefix = continues ? Self.continuingPrefix : Self.parametersPrefix
        var reply: [UInt8] = []
        reply.reserveCapacity(line.count + prefix.count - Self.resultPrefix.count)
        reply.append(contentsOf: prefix)
        // `R}` without the line's `\n`, then the message's NUL.
        reply.append(contentsOf: line[Self.resultPrefix.count..<(line.count - 1)])
        reply.append(0)
        return reply
    }

    /// One piece of a long result line written a piece at a time (`list_users` of many users): the first piece's
    /// envelope becomes the reply's, and the line's final newline (the only raw newline in it) becomes the NUL.
    static func chunk(_ piece: [UInt8], first: Bool) -> [UInt8] {
        var piece = piece
        if first, piece.starts(with: Self.resultPrefix) {
            piece.replaceSubrange(0..<Self.resultPrefix.count, with: Self.parametersPrefix)
        }
        if piece.last == UInt8(ascii: "\n") { piece[piece.count - 1] = 0 }
        return piece
    }

    /// An event line (`{"data":…,"event":…,"generation":…}\n`) as a reply of the call that streams it: the event
    /// object is the reply's parameters, as it is. `final`: the last reply of its call (no `continues`).
    static func event(_ line: [UInt8], final: Bool = false) -> [UInt8] {
        let prefix = final ? Self.parametersPrefix : Self.continuingPrefix
        var reply: [UInt8] = []
        reply.reserveCapacity(prefix.count + line.count + 1)
        reply.append(contentsOf: prefix)
        reply.append(contentsOf: line.last == UInt8(ascii: "\n") ? line.dropLast() : line[...])
        reply.append(UInt8(ascii: "}"))
        reply.append(0)
        return reply
    }

    /// The Varlink error for an error line of the dispatcher's.
    private static func error(from line: [UInt8]) -> [UInt8] {
        guard case .response(_, .failure(let error))? = try? LineCodec.decodeIncoming(line.dropLast()) else {
            return Self.error(ResponseError(.internal, "the answer could not be turned into a Varlink reply"))
        }
        return Self.error(error)
    }

    /// A usher error as Varlink's: `io.usher.Session.UserNotFound` with the message (and, for the codes that have
    /// them, the `data` fields) as parameters; `invalid_params` as `org.varlink.service.InvalidParameter`.
    static func error(_ error: ResponseError) -> [UInt8] {
        switch error.code {
        case .invalidParams:
            return Self.error(
                VarlinkService.invalidParameter,
                ["parameter": .string(Self.parameter(named: error.message))]
            )
        case .unknownMethod:
            return Self.error(VarlinkService.methodNotFound, ["method": .string("")])
        default:
            var parameters = error.data ?? [:]
            parameters["message"] = .string(error.message)
            return Self.error(SessionInterface.errorName(error.code), parameters)
        }
    }

    /// A reply that is an error: `{"error": name, "parameters": {...}}` and the NUL.
    static func error(_ name: String, _ parameters: [String: JSONValue] = [:]) -> [UInt8] {
        var line = LineCodec.line(JSONValue.object(["error": .string(name), "parameters": .object(parameters)]))
        line[line.count - 1] = 0
        return line
    }

    /// A reply with these parameters.
    static func parameters(_ parameters: [String: JSONValue]) -> [UInt8] {
        var line = LineCodec.line(JSONValue.object(["parameters": .object(parameters)]))
        line[line.count - 1] = 0
        return line
    }

    /// The parameter an `invalid_params` message is about: its messages begin `params.NAME` (`params.limit must be
    /// an integer`); the whole parameters object otherwise.
    static func parameter(named message: String) -> String {
        guard message.hasPrefix("params.") else { return "parameters" }
        let name = message.dropFirst("params.".count).prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." }
        return name.isEmpty ? "parameters" : String(name)
    }

    /// The last reply of a subscription whose `read` permission a reload took away; the connection closes after it.
    static let revocationNotice = Self.from(answer: SocketServer.revocationNotice)
}
