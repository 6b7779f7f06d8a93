import UsherCore
import UsherProtocol

/// The Varlink side of one connection on the Varlink socket: each call becomes the dispatcher's request, each answer
/// the call's reply (`VarlinkReply`). The same dispatcher, permissions, limits and audit as a request line: the call
/// is only framed differently.
///
/// Used by the connection's `RequestHandler` on its event loop, which answers one call at a time, in order: so the
/// call being answered is the one `begin` saw last.
struct VarlinkCalls {
    /// The call being answered: whether it wants no reply, and whether its replies go on (`more`) when it succeeds.
    private var oneway = false
    private var continuing = false
    private var method: Method?
    /// The method of a call whose replies go on: `subscribe` (events) or `inhibit` (the lease's events). Varlink
    /// answers calls in order, so no later call on the connection is answered until it ends.
    private(set) var streaming: Method?
    /// On the user database's socket (`io.usher.Users`): the interface that answers every call but
    /// `org.varlink.service`'s, in place of the dispatcher.
    private let userDatabase: UserDatabaseInterface?

    init(userDatabase: UserDatabaseInterface? = nil) {
        self.userDatabase = userDatabase
    }

    /// Starts answering a call (one message, without its NUL): answered at once (with the reply, empty for a oneway
    /// call), or pending with the dispatcher.
    mutating func begin(
        _ message: some Collection<UInt8>,
        dispatcher: Dispatcher,
        context: Dispatcher.Context
    ) -> FramedStep {
        let limits = dispatcher.settings.limits
        self.oneway = false
        self.continuing = false
        self.method = nil
        let call: VarlinkCall
        do {
            call = try VarlinkCall.decode(
                message,
                maximumDepth: limits.maximumJSONDepth,
                maximumMembers: limits.maximumJSONMembers
            )
        } catch {
            return .answered(VarlinkReply.error(error))
        }
        self.oneway = call.oneway
        if call.upgrade {
            // No method of this service upgrades its connection to another protocol.
            return self.reply(VarlinkReply.error(VarlinkService.invalidParameter, ["parameter": "upgrade"]))
        }
        if let userDatabase = self.userDatabase {
            if call.interface == VarlinkService.name {
                let interfaces = UserDatabaseInterface.interfaces
                return self.reply(VarlinkService.answer(call, version: dispatcher.version, interfaces: interfaces))
            }
            return self.reply(userDatabase.answer(call))
        }
        if call.interface == VarlinkService.name {
            return self.reply(VarlinkService.answer(call, version: dispatcher.version))
        }
        guard call.interface == SessionInterface.name else {
            return self.reply(
                VarlinkReply.error(VarlinkService.interfaceNotFound, ["interface": .string(call.interface)])
            )
        }
        guard let method = SessionInterface.methods[call.member] else {
            return self.reply(VarlinkReply.error(VarlinkService.methodNotFound, ["method": .string(call.method)]))
        }
        let continuing = call.more && !call.oneway && (method == .subscribe || method == .inhibit)
        if method == .subscribe, !continuing {
            return self.reply(VarlinkReply.error(VarlinkService.expectedMore))
        }
        self.continuing = continuing
        self.method = method
        switch dispatcher.begin(head: call.head(method: method), context: context) {
        case .answered(let reply): return .answered(self.reply(to: reply))
        case .pending(let pending): return .pending(pending)
        }
    }

    private func reply(_ bytes: [UInt8]) -> FramedStep {
        .answered(self.oneway ? [] : bytes)
    }

    /// The reply to the call being answered, from the dispatcher's answer to it; empty for a oneway call. A call
    /// with `more` that succeeded goes on streaming.
    mutating func reply(to answer: Reply) -> [UInt8] {
        guard !self.oneway else { return [] }
        let succeeded = answer.succeeded
        if self.continuing, succeeded { self.streaming = self.method }
        return VarlinkReply.from(answer, continues: self.continuing && succeeded)
    }

    /// The reply that carries an event for the lease a streaming `Inhibit` holds; nil when no such call streams (the
    /// event then has no reply to go in). `lease_broken` ends the call: the connection answers calls again.
    mutating func leaseEvent(_ event: Event) -> [UInt8]? {
        guard self.streaming == .inhibit else { return nil }
        let final = event.name == .leaseBroken
        if final { self.streaming = nil }
        return VarlinkReply.event(LineCodec.encode(event), final: final)
    }

    /// Whether a piece of a long answer should be written (not for a oneway call).
    var wantsReply: Bool { !self.oneway }
}

extension EventLineFormat {
    /// Events as the Varlink socket writes them: each a reply of the `Subscribe` call, with `continues`.
    static let varlink = EventLineFormat { event in VarlinkReply.event(LineCodec.encode(event)) }
}
