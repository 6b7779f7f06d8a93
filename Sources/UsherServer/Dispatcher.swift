import Logging
import UsherCore
import UsherProtocol

/// Answers request lines: reads a line's envelope, finds its method's handler (`Methods/`), checks the permission the
/// handler names against the policy in force, and runs the handler.
///
/// A class, not a struct: every request's `MethodHandler.Call` holds it, and a reference is one retain where a copy of
/// its members was one per member on the hot path.
package final class Dispatcher: Sendable {
    /// What answering a request produced.
    package enum Outcome: Sendable {
        case response(Reply)
        /// A long response, written a piece at a time as the socket takes them.
        case streamed(ListLineChunks)
        /// The connection subscribed: write the response, then forward the subscription's events.
        case subscribed(response: Reply, subscription: EventHub.LineSubscription)
    }

    /// What the dispatcher knows about the connection a request came on. Not what the peer may do: that is asked of
    /// the policy in force for every request, so a reload applies to connections that are already open.
    ///
    /// A class for the same reason as the dispatcher: made once per connection, held by every request's call.
    package final class Context: Sendable {
        package let peer: PeerCredentials
        /// The peer's executable (`/proc/PID/exe`), when it can be read.
        package let executable: String?
        package let logger: Logger
        /// Closes the connection (a subscriber that stopped reading is disconnected).
        package let close: @Sendable () -> Void
        /// Unique per connection: the leases it takes are its own.
        package let connectionID: UInt64
        /// The peer's seat as logind sees it, resolved once when the connection was accepted (`[seats] source =
        /// "logind"`); nil: the default seat.
        package let seat: String?
        /// Writes an event to this connection alone (`switch_pending`, `lease_broken` to a lease holder).
        package let notify: @Sendable (Event) -> Void
        /// How this connection's subscription events are written: lines, or Varlink replies.
        package let eventFormat: EventLineFormat
        /// Whether the peer is still there: its requests read in full are carried out when it is not (audited with
        /// `client_gone=true`), and only their answers are dropped.
        package let presence: ClientPresence

        package init(
            peer: PeerCredentials,
            executable: String? = nil,
            logger: Logger,
            close: @escaping @Sendable () -> Void = {},
            connectionID: UInt64 = 0,
            seat: String? = nil,
            notify: @escaping @Sendable (Event) -> Void = { _ in },
            eventFormat: EventLineFormat = .lines,
            presence: ClientPresence = ClientPresence()
        ) {
            self.peer = peer
            self.executable = executable
            self.logger = logger
            self.close = close
            self.connectionID = connectionID
            self.seat = seat
            self.notify = notify
            self.eventFormat = eventFormat
            self.presence = presence
        }
    }

    package let registry: SessionRegistry
    package let version: String
    package let startedAt: ContinuousClock.Instant
    package let connectionCount: @Sendable () -> Int
    package let settings: ServerSettings
    /// Where audit records go (`AuditLog.swift`; `audit(...)` is defined there).
    package let auditLog: AuditLog
    /// Counts failed logins and refuses guessers (`[login_throttle]`).
    package let throttle: LoginThrottle
    /// Bounds the records each peer uid can make the daemon log per second (`[limits] max_log_records_per_second`).
    package let logBudget: PeerLogBudget

    package init(
        registry: SessionRegistry,
        version: String,
        settings: ServerSettings,
        auditLog: AuditLog = AuditLog(),
        throttle: LoginThrottle = LoginThrottle(),
        logBudget: PeerLogBudget? = nil,
        connectionCount: @escaping @Sendable () -> Int
    ) {
        self.registry = registry
        self.version = version
        self.startedAt = ContinuousClock.now
        self.settings = settings
        self.auditLog = auditLog
        self.throttle = throttle
        self.logBudget =
            logBudget
            ?? PeerLogBudget(
                limit: { settings.limits.maximumLogRecordsPerSecond },
                logger: Logger(label: "usherd.audit", factory: { _ in SwiftLogNoOpLogHandler() })
            )
        self.connectionCount = connectionCount
    }

    /// Where `begin` left a request.
    package enum Step: Sendable {
        /// Answered already (a read from the published state, or an error).
        case answered(Reply)
        /// Needs the registry: finish it with `finish`, off the event loop.
        case pending(Pending)
    }

    /// A request that passed the permission check, decoded, with the rest of its answer to run off the event loop.
    package struct Pending: Sendable {
        let handler: MethodHandler
        let call: MethodHandler.Call
        let run: @Sendable () async throws -> MethodHandler.Answer
    }

    /// Answers one line. Never throws: every failure becomes an error response.
    package func handle(line: some Collection<UInt8>, context: Context) async -> Outcome {
        switch self.begin(line: line, context: context) {
        case .answered(let reply): return .response(reply)
        case .pending(let pending): return await self.finish(pending, context: context)
        }
    }

    /// The synchronous half of answering a line, run on the connection's event loop.
    ///
    /// The work is ordered so that a peer cannot make the daemon spend much on a request it may not make: the line is
    /// scanned (bounded by `[limits]`) for its method, the permission is checked against the current policy, and
    /// only then are the parameters decoded, once, into the method's typed request. Reads are answered here, from the
    /// registry's published state; everything else is handed to `finish`.
    package func begin(line: some Collection<UInt8>, context: Context) -> Step {
        let limits = self.settings.limits
        let head: RequestHead
        do {
            head = try LineCodec.decodeHead(
                line,
                maximumDepth: limits.maximumJSONDepth,
                maximumMembers: limits.maximumJSONMembers
            )
        } catch {
            return .answered(.failure(id: error.id, error.error))
        }
        return self.begin(head: head, context: context)
    }

    /// `begin` for a request whose envelope is read already: a line's, or a Varlink call's (`VarlinkCalls`), which
    /// is the same request in another framing.
    package func begin(head: RequestHead, context: Context) -> Step {
        guard let method = Method(rawValue: head.method) else {
            return .answered(
                .failure(id: head.id, ResponseError(.unknownMethod, "unknown method \"\(head.method.prefix(64))\""))
            )
        }
        let handler = MethodHandler.for(method)
        let policy = self.settings.policy
        var permissions: Set<Permission> = []
        var scope = SeatScope.everywhere
        if !policy.hasSeatRules {
            permissions = policy.permissions(for: context.peer)
            if let required = handler.permission, !permissions.contains(required) {
                return .answered(self.denied(method, head, required, context))
            }
        } else {
            // Rules limited to seats: the permission holds on some seats only. Requests about the whole device are
            // refused here; requests about seats carry the scope to where their seats are known (`SeatReach`).
            if method == .hello {
                let seat = head.peekParam("seat") ?? context.seat ?? self.registry.view.defaultSeat
                permissions = policy.permissions(for: context.peer, seat: seat)
            }
            if let required = handler.permission {
                guard let granted = policy.scope(of: required, for: context.peer),
                    granted == .everywhere || handler.reach != .device
                else {
                    return .answered(self.denied(method, head, required, context))
                }
                scope = handler.reach == .seats ? granted : .everywhere
            }
        }
        let privileged = policy.isPrivileged(context.peer)
        if handler.owner == .administrator, !privileged {
            return .answered(self.notAdministrator(method, head, context))
        }
        let params: Params
        do {
            params = try head.decodeParams()
        } catch {
            return .answered(.failure(id: error.id, error.error))
        }
        let call = MethodHandler.Call(
            id: head.id,
            dispatcher: self,
            context: context,
            scope: scope,
            permissions: permissions,
            params: params,
            ownership: privileged ? .everyone : .uid(context.peer.uid)
        )
        do {
            switch try handler.start(params, call) {
            case .answered(let reply): return .answered(reply)
            case .read(let answer):
                // The method table says whether a method is audited; reads from the published state are audited
                // here, as `finish` audits the asynchronous answers.
                if handler.isAudited {
                    self.audit(
                        method.rawValue,
                        userID: answer.userID,
                        outcome: "ok",
                        tokenExpiresAt: answer.tokenExpiresAt,
                        details: answer.auditDetails,
                        context
                    )
                }
                return .answered(answer.reply)
            case .pending(let run): return .pending(Pending(handler: handler, call: call, run: run))
            }
        } catch {
            return .answered(self.failed(handler, call, error))
        }
    }

    /// The asynchronous half: runs the rest of the handler's answer, through the registry.
    package func finish(_ pending: Pending, context: Context) async -> Outcome {
        if let seat = context.seat, !self.registry.view.isKnown(seat: seat) {
            // logind put the caller on a seat its monitor has not reported yet: logind is the authority on seats.
            await self.registry.seatAppeared(seat)
        }
        do {
            let answer = try await pending.run()
            if pending.handler.isAudited {
                self.audit(
                    pending.handler.method.rawValue,
                    userID: answer.userID,
                    outcome: answer.forced ? "forced" : "ok",
                    tokenExpiresAt: answer.tokenExpiresAt,
                    details: answer.auditDetails,
                    context
                )
            }
            return answer.outcome
        } catch {
            return .response(self.failed(pending.handler, pending.call, error))
        }
    }

    /// The error reply for a request that failed, audited when its method is.
    func failed(_ handler: MethodHandler, _ call: MethodHandler.Call, _ error: any Error) -> Reply {
        let wire = ResponseError(mapping: error, logger: call.context.logger)
        if handler.isAudited {
            // A wait its client ended by leaving (`ClientPresence.cancellingWhenGone`) was cancelled, not broken.
            let cancelled = error is CancellationError && call.context.presence.isGone
            self.audit(
                handler.method.rawValue,
                userID: call.params["user_id"]?.stringValue,
                outcome: cancelled ? "cancelled" : wire.code.rawValue,
                error: wire,
                call.context
            )
        }
        return .failure(id: call.id, wire)
    }

    /// The answer to a request the peer lacks the permission for (on every seat the request is about), audited.
    private func denied(_ method: Method, _ head: RequestHead, _ required: Permission, _ context: Context) -> Reply {
        let limited =
            self.settings.policy.scope(of: required, for: context.peer) != nil
            ? " on every seat (this peer has it on some seats only, and \(method.rawValue) is about the whole device)"
            : ""
        return self.denied(
            method,
            head,
            "\(method.rawValue) needs the \"\(required.rawValue)\" permission\(limited)",
            permission: required,
            context
        )
    }

    /// The answer to a request only root and usherd's own uid may make (`OwnerRule.administrator`), audited.
    private func notAdministrator(_ method: Method, _ head: RequestHead, _ context: Context) -> Reply {
        self.denied(
            method,
            head,
            "\(method.rawValue) is an administrator's act: only root and usherd's own uid may call it",
            context
        )
    }

    /// A refusal before the parameters are decoded: audited as `denied`, answered `permission_denied` with `message`.
    private func denied(
        _ method: Method,
        _ head: RequestHead,
        _ message: String,
        permission: Permission? = nil,
        _ context: Context
    ) -> Reply {
        self.audit(
            method.rawValue,
            userID: head.peekParam("user_id"),
            outcome: "denied",
            permission: permission,
            context
        )
        return .failure(id: head.id, ResponseError(.permissionDenied, message))
    }

    /// A connection closed: the leases it held die with it, as a logind inhibitor dies with its file descriptor.
    package func connectionClosed(_ context: Context) {
        for lease in self.registry.leases.releaseAll(connectionID: context.connectionID) {
            self.audit(
                "release",
                userID: nil,
                outcome: "connection_closed",
                details: ["lease": "\(lease.lease)"],
                context
            )
        }
    }
}
