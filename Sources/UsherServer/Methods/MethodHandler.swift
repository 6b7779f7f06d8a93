import Logging
import UsherCore
import UsherProtocol

/// Everything the server knows about one protocol method, in one value: its name, the permission it needs, what it
/// is about for rules limited to seats, whether every call is audited, and how it is answered.
///
/// Each method is one file of `Methods/` that declares its handler (as Hummingbird registers one handler per route);
/// the dispatcher finds it with `MethodHandler.for(_:)` and runs it. A handler decodes the request's parameters once,
/// into its typed request, and answers either at once from the published state (`read`, on the connection's event
/// loop: no task, no hop to the registry actor) or later through the registry (`answer`).
package struct MethodHandler: Sendable {
    package let method: Method
    /// Nil: always allowed (`hello`).
    package let permission: Permission?
    /// What a request is about, for rules limited to seats.
    package let reach: SeatReach
    /// Whether every call leaves an audit record (refused requests always do).
    package let isAudited: Bool
    /// Whose user (or login in progress) the peer must own besides holding `permission`: docs/protocol.md, "Whose
    /// user", lists it per method, and a test checks that table against these declarations.
    package let owner: OwnerRule
    /// Decodes the parameters into the typed request and starts answering it.
    let start: @Sendable (_ params: Params, _ call: Call) throws -> Start

    /// A request being answered: what the handler needs besides its typed request.
    package struct Call: Sendable {
        package var id: RequestID?
        package var dispatcher: Dispatcher
        package var context: Dispatcher.Context
        /// Where the peer's permission for this method holds.
        package var scope: SeatScope
        /// The peer's permissions (only `hello` reports them; computed only for it).
        package var permissions: Set<Permission>
        /// The request's parameters as decoded (for the audit record of a failure).
        package var params: Params
        /// Whose users and logins the peer owns (`OwnerRule`): everyone's for root and usherd's uid, else its own.
        package var ownership: Ownership

        /// The registry, for the asynchronous answers.
        var registry: SessionRegistry { self.dispatcher.registry }

        /// The seat a read answered from the published state is about: the one it names (which must be known), else
        /// the caller's seat as logind saw it when the connection was accepted, else nil (the default seat).
        func seat(_ requested: String?) throws(SessionError) -> String? {
            if let requested {
                guard self.dispatcher.registry.view.isKnown(seat: requested) else { throw .seatNotFound(requested) }
                return requested
            }
            return self.context.seat
        }

        /// The seat a request the registry answers is about, unchecked: the registry checks it, once, where the
        /// change is made (`seat_not_found` for a seat it does not know).
        func requestedSeat(_ requested: String?) -> String? {
            requested ?? self.context.seat
        }
    }

    /// How a handler started: answered already, or with the rest to do off the event loop.
    enum Start: Sendable {
        case answered(Reply)
        /// Answered from the published state, on the event loop: the dispatcher audits it when the method is audited.
        case read(ReadAnswer)
        case pending(@Sendable () async throws -> Answer)
    }

    /// An answer from the published state, and what its audit record names (when the method is audited; the
    /// dispatcher writes the record, as it does for the asynchronous answers).
    package struct ReadAnswer: Sendable {
        package var reply: Reply
        package var userID: String?
        package var tokenExpiresAt: Timestamp?
        package var auditDetails: Logger.Metadata

        package init(
            _ reply: Reply,
            userID: String? = nil,
            tokenExpiresAt: Timestamp? = nil,
            auditDetails: Logger.Metadata = [:]
        ) {
            self.reply = reply
            self.userID = userID
            self.tokenExpiresAt = tokenExpiresAt
            self.auditDetails = auditDetails
        }
    }

    /// What an asynchronous answer produced: the outcome, and what its audit record names.
    package struct Answer: Sendable {
        package var outcome: Dispatcher.Outcome
        package var userID: String?
        package var tokenExpiresAt: Timestamp?
        /// Sent with `force`: audited as `forced` (it may have broken block leases).
        package var forced: Bool
        /// Fields of the audit record that only the handler knows (a lease's id and seat); not part of what makes
        /// two records repeats of each other.
        package var auditDetails: Logger.Metadata = [:]

        package init(
            _ outcome: Dispatcher.Outcome,
            userID: String? = nil,
            tokenExpiresAt: Timestamp? = nil,
            forced: Bool = false
        ) {
            self.outcome = outcome
            self.userID = userID
            self.tokenExpiresAt = tokenExpiresAt
            self.forced = forced
        }

        /// A result line for `call`.
        package static func result(
            _ result: some Encodable,
            _ call: Call,
            userID: String? = nil,
            tokenExpiresAt: Timestamp? = nil,
            forced: Bool = false
        ) -> Answer {
            Answer(
                .response(.result(id: call.id, result)),
                userID: userID,
                tokenExpiresAt: tokenExpiresAt,
                forced: forced
            )
        }

        /// A result line for `call` answering with a user (`login`, `switch_user`, ...): written by `WireWriter`, as
        /// `current_user`'s is, not by `JSONEncoder` (which re-decoded the user's profile to encode it again, a third of
        /// a `switch_user`'s instructions).
        package static func result(
            _ result: UserResult,
            _ call: Call,
            userID: String? = nil,
            tokenExpiresAt: Timestamp? = nil,
            forced: Bool = false
        ) -> Answer {
            Answer(
                .response(.result(id: call.id, capacity: 1024) { result.write(to: &$0) }),
                userID: userID,
                tokenExpiresAt: tokenExpiresAt,
                forced: forced
            )
        }

        /// The same answer, with fields for its audit record.
        package func auditing(_ details: Logger.Metadata) -> Answer {
            var answer = self
            answer.auditDetails = details
            return answer
        }
    }

    /// A handler for the typed request `Request`.
    ///
    /// - Parameters:
    ///   - read: the answer from the published state, on the event loop; nil from it (or no `read`): `answer` runs.
    ///   - answer: the asynchronous answer, through the registry.
    init<Request: UsherRequest>(
        _ type: Request.Type,
        permission: Permission?,
        reach: SeatReach,
        audited: Bool = false,
        owner: OwnerRule = .none,
        read: (@Sendable (Request, Call) throws -> ReadAnswer?)? = nil,
        answer: @escaping @Sendable (Request, Call) async throws -> Answer
    ) {
        self.init(method: Request.method, permission: permission, reach: reach, isAudited: audited, owner: owner) {
            params,
            call in
            let request = try Request(params: params)
            if let read, let answer = try read(request, call) { return .read(answer) }
            return .pending { try await answer(request, call) }
        }
    }

    /// A handler whose every answer comes from the published state, on the event loop.
    static func inline<Request: UsherRequest>(
        _ type: Request.Type,
        permission: Permission?,
        reach: SeatReach,
        _ answer: @escaping @Sendable (Request, Call) throws -> Reply
    ) -> MethodHandler {
        MethodHandler(method: Request.method, permission: permission, reach: reach, isAudited: false, owner: .none) {
            params,
            call in
            .answered(try answer(try Request(params: params), call))
        }
    }

    private init(
        method: Method,
        permission: Permission?,
        reach: SeatReach,
        isAudited: Bool,
        owner: OwnerRule,
        start: @escaping @Sendable (Params, Call) throws -> Start
    ) {
        self.method = method
        self.permission = permission
        self.reach = reach
        self.isAudited = isAudited
        self.owner = owner
        self.start = start
    }
}
