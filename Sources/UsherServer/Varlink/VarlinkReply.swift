import UsherProtocol

/// Varlink replies, made from the dispatcher's answers as values (`Reply`).
///
/// A Varlink call is a second framing of the same request, not a second implementation: the connection hands the
/// dispatcher the request with no id, and writes its answer here: a result's JSON (encoded once, by `WireWriter` or
/// `LineCodec`) as the reply's `parameters`, an error as Varlink's qualified error name with its fields, and
/// `invalid_params` as `org.varlink.service.InvalidParameter` naming the parameter `ParamsDecoder` found at fault.
enum VarlinkReply {
    private static let parametersPrefix: [UInt8] = Array(#"{"parameters":"#.utf8)
    private static let continuingPrefix: [UInt8] = Array(#"{"continues":true,"parameters":"#.utf8)

    /// The reply for an answer: its result as the reply's parameters (with `continues` when more replies follow), or
    /// its error as a Varlink error.
    static func from(_ answer: Reply, continues: Bool = false) -> [UInt8] {
        switch answer.body {
        case .result(let json):
            let prefix = continues ? Self.continuingPrefix : Self.parametersPrefix
            var reply: [UInt8] = []
            reply.reserveCapacity(prefix.count + json.count + 2)
            reply.append(contentsOf: prefix)
            reply.append(contentsOf: json)
            reply.append(UInt8(ascii: "}"))
            reply.append(0)
            return reply
        case .failure(let error):
            return Self.error(error)
        }
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

    /// A usher error as Varlink's: `io.usher.Session.UserNotFound` with the message (and, for the codes that have
    /// them, the `data` fields) as parameters; `invalid_params` as `org.varlink.service.InvalidParameter`.
    static func error(_ error: ResponseError) -> [UInt8] {
        switch error.code {
        case .invalidParams:
            return Self.error(
                VarlinkService.invalidParameter,
                ["parameter": .string(error.parameter ?? "parameters")]
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

    /// The last reply of a subscription whose `read` permission a reload took away; the connection closes after it.
    static let revocationNotice = Self.error(SocketServer.revocationError)
}
