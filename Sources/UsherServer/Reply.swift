import UsherProtocol

/// The answer to one request, as a value: the request's id, and its result (the result object's JSON, encoded once by
/// `WireWriter` or `LineCodec`) or its error.
///
/// Handlers and the dispatcher answer with a `Reply`; each framing writes it its own way, from the value: the
/// newline-delimited socket as a line (`line`), the Varlink socket as a reply (`VarlinkReply.from`), neither from the
/// other's bytes. A result's JSON is shared, not copied, until the framing writes it.
package struct Reply: Sendable {
    package enum Body: Sendable {
        /// The result object, as JSON.
        case result([UInt8])
        /// Indirect: an error is rare, and a reply is copied on every answer's way out, as one word rather than the
        /// error's four fields.
        indirect case failure(ResponseError)
    }

    package var id: RequestID?
    package var body: Body

    package init(id: RequestID?, _ body: Body) {
        self.id = id
        self.body = body
    }

    /// A result whose JSON is written already (the published state's answers, encoded once per change).
    package static func result(id: RequestID?, json: [UInt8]) -> Reply {
        Reply(id: id, .result(json))
    }

    /// A result encoded as `LineCodec` encodes it (sorted keys, no white space).
    package static func result(id: RequestID?, _ value: some Encodable) -> Reply {
        var json = LineCodec.line(value)
        json.removeLast()
        return Reply(id: id, .result(json))
    }

    /// A result written by `WireWriter`, byte for byte what `LineCodec` would write (the hot path's answers).
    package static func result(id: RequestID?, capacity: Int = 512, _ write: (inout WireWriter) -> Void) -> Reply {
        var writer = WireWriter(capacity: capacity)
        write(&writer)
        return Reply(id: id, .result(writer.bytes))
    }

    package static func failure(id: RequestID?, _ error: ResponseError) -> Reply {
        Reply(id: id, .failure(error))
    }

    package var succeeded: Bool {
        if case .result = self.body { return true }
        return false
    }

    /// The reply as the newline-delimited socket writes it: `{"id":…,"result":…}\n` or `{"error":…,"id":…}\n`.
    package var line: [UInt8] {
        switch self.body {
        case .result(let json): WireWriter.responseLine(id: self.id, resultJSON: json)
        case .failure(let error): LineCodec.encodeError(id: self.id, error)
        }
    }
}

/// Where a framing left a request: answered, with the bytes the framing writes (empty: a Varlink call with `oneway`,
/// which gets no reply), or pending with the registry.
package enum FramedStep: Sendable {
    case answered([UInt8])
    case pending(Dispatcher.Pending)
}

extension Dispatcher.Step {
    /// The step as the newline-delimited socket writes it.
    var asLine: FramedStep {
        switch self {
        case .answered(let reply): .answered(reply.line)
        case .pending(let pending): .pending(pending)
        }
    }
}
