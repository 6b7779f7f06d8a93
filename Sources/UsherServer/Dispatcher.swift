import Logging
import UsherCore
import UsherProtocol

/// Routes one decoded request to the registry and turns the outcome into a response line.
package struct Dispatcher: Sendable {
    /// What answering a request produced.
    package enum Outcome: Sendable {
        case response([UInt8])
        /// A long response, written a piece at a time as the socket takes them.
        case streamed(ListLineChunks)
        /// The connection subscribed: write the response, then forward the subscription's events.
        case subscribed(response: [UInt8], subscription: EventHub.LineSubscription)
    }

    /// What the dispatcher knows about the connection a request came on. Not what the peer may do: that is asked of
    /// the policy in force for every request, so a reload applies to connections that are already open.
    package struct Context: Sendable {
        package var peer: PeerCredentials
        /// The peer's executable (`/proc/PID/exe`), when it can be read.
        package var executable: String?
        package var logger: Logger
        /// Closes the connection (a subscriber that stopped reading is disconnected).
        package var close: @Sendable () -> Void
        /// Unique per connection: the leases it takes are its own.
        package var connectionID: UInt64
        /// The peer's seat as logind sees it, resolved once when the connection was accepted (`[seats] source =
        /// "logind"`); nil: the default seat.
        package var seat: String?
        /// Writes an event line to this connection (`switch_pending`, `lease_broken` to a lease holder).
        package var notify: @Sendable ([UInt8]) -> Void

        package init(
            peer: PeerCredentials,
            executable: String? = nil,
            logger: Logger,
            close: @escaping @Sendable () -> Void = {},
            connectionID: UInt64 = 0,
            seat: String? = nil,
            notify: @escaping @Sendable ([UInt8]) -> Void = { _ in }
        ) {
            self.peer = peer
            self.executable = executable
            self.logger = logger
            self.close = close
            self.connectionID = connectionID
            self.seat = seat
            self.notify = notify
        }
    }

    /// The methods whose every call leaves an audit record.
    static let audited: Set<Method> = [
        .register, .login, .loginBegin, .loginWait, .switchUser, .logout, .removeUser, .accessToken, .refresh,
        .createAPIKey, .deleteAPIKey, .inhibit, .release,
    ]
    /// Audited methods whose success the handler audits itself, with details only it knows (a lease's id and seat).
    static let auditedByHandler: Set<Method> = [.inhibit]

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
        case answered([UInt8])
        /// Needs the registry: finish it with `finish`, off the event loop.
        case pending(Pending)
    }

    /// A request that passed the permission check and needs the registry.
    package struct Pending: Sendable {
        var head: RequestHead
        var method: Method
        var permissions: Set<Permission>
    }

    /// Answers one line. Never throws: every failure becomes an error response.
    package func handle(line: some Collection<UInt8>, context: Context) async -> Outcome {
        switch self.begin(line: line, context: context) {
        case .answered(let bytes): return .response(bytes)
        case .pending(let pending): return await self.finish(pending, context: context)
        }
    }

    /// The synchronous half of answering a line, run on the connection's event loop.
    ///
    /// The work is ordered so that a peer cannot make the daemon spend much on a request it may not make: the line is
    /// scanned (bounded by `[limits]`) for its method, the permission is checked against the current policy, and
    /// only then are the parameters decoded. Reads are answered here, from the registry's published state
    /// (`Dispatcher+Reads.swift`); everything else is handed to `finish`.
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
            return .answered(LineCodec.encodeError(id: error.id, error.error))
        }
        guard let method = Method(rawValue: head.method) else {
            return .answered(
                LineCodec.encodeError(
                    id: head.id,
                    ResponseError(.unknownMethod, "unknown method \"\(head.method.prefix(64))\"")
                )
            )
        }
        let policy = self.settings.policy
        // Only a policy with seat-scoped rules looks at the request's seat (a scan of its params for one key).
        let permissions =
            policy.hasSeatRules
            ? policy.permissions(for: context.peer, seat: self.permissionSeat(head, context))
            : policy.permissions(for: context.peer)
        if let required = Permission.required(for: method), !permissions.contains(required) {
            self.audit(
                method.rawValue,
                userID: head.peekParam("user_id"),
                outcome: "denied",
                permission: required,
                context
            )
            return .answered(
                LineCodec.encodeError(
                    id: head.id,
                    ResponseError(.permissionDenied, "\(method.rawValue) needs the \"\(required.rawValue)\" permission")
                )
            )
        }
        let pending = Pending(head: head, method: method, permissions: permissions)
        return self.answerRead(pending, context: context).map(Step.answered) ?? .pending(pending)
    }

    /// The asynchronous half: decodes the parameters and asks the registry.
    package func finish(_ pending: Pending, context: Context) async -> Outcome {
        let method = pending.method
        let request: Request
        do {
            request = Request(id: pending.head.id, method: pending.head.method, params: try pending.head.decodeParams())
        } catch {
            return .response(LineCodec.encodeError(id: error.id, error.error))
        }
        do {
            let (outcome, userID, tokenExpiresAt) = try await self.answer(method, request, pending.permissions, context)
            if Self.audited.contains(method), !Self.auditedByHandler.contains(method) {
                // A change sent with `force` is recorded as such: it may have broken block leases.
                let forced = request.params["force"] == .bool(true)
                self.audit(
                    method.rawValue,
                    userID: userID,
                    outcome: forced ? "forced" : "ok",
                    tokenExpiresAt: tokenExpiresAt,
                    context
                )
            }
            return outcome
        } catch {
            return .response(self.failed(method, request, error, context))
        }
    }

    /// The error line for a request that failed, audited when its method is.
    func failed(_ method: Method, _ request: Request, _ error: any Error, _ context: Context) -> [UInt8] {
        let wire = ResponseError(mapping: error, logger: context.logger)
        if Self.audited.contains(method) {
            self.audit(
                method.rawValue,
                userID: request.params["user_id"]?.stringValue,
                outcome: wire.code.rawValue,
                error: wire,
                context
            )
        }
        return LineCodec.encodeError(id: request.id, wire)
    }

    /// Answers a request; also returns the user it concerned, for the audit record.
    private func answer(
        _ method: Method,
        _ request: Request,
        _ permissions: Set<Permission>,
        _ context: Context
    ) async throws -> (Outcome, String?, Timestamp?) {
        let id = request.id
        let params = request.params
        if let seat = context.seat, !self.registry.view.isKnown(seat: seat) {
            // logind put the caller on a seat its monitor has not reported yet: logind is the authority on seats.
            await self.registry.seatAppeared(seat)
        }
        func reply(
            _ result: some Encodable,
            user: String? = nil,
            tokenExpiresAt: Timestamp? = nil
        ) -> (Outcome, String?, Timestamp?) {
            (.response(LineCodec.encodeResult(id: id, result)), user, tokenExpiresAt)
        }
        switch method {
        case .hello:
            _ = try HelloRequest(params: params)
            return reply(
                HelloRequest.Result(
                    protocol: protocolVersion,
                    server: "usherd",
                    version: self.version,
                    peer: HelloRequest.Peer(uid: context.peer.uid, gid: context.peer.gid, pid: context.peer.pid),
                    permissions: permissions.sorted().map(\.rawValue)
                )
            )
        case .providers:
            _ = try ProvidersRequest(params: params)
            return reply(ProvidersRequest.Result(providers: await self.registry.providerInfos()))
        case .register:
            let typed = try RegisterRequest(params: params)
            return reply(
                try await self.throttle.register(email: typed.email, peer: context.peer.uid) {
                    try await self.registry.register(
                        provider: typed.provider,
                        email: typed.email,
                        password: typed.password
                    )
                }
            )
        case .login:
            let typed = try LoginRequest(params: params)
            let seat = try self.seat(typed.seat, context)
            let result = try await self.throttle.login(credentials: typed.credentials, peer: context.peer.uid) {
                try await self.registry.login(
                    provider: typed.provider,
                    credentials: typed.credentials,
                    seat: seat,
                    move: typed.move,
                    force: typed.force
                )
            }
            return reply(result, user: result.user.id)
        case .loginBegin:
            let typed = try LoginBeginRequest(params: params)
            return reply(
                try await self.registry.loginBegin(
                    provider: typed.provider,
                    type: typed.type,
                    redirectURI: typed.redirectURI
                )
            )
        case .loginWait:
            let typed = try LoginWaitRequest(params: params)
            let result = try await self.registry.loginWait(
                loginID: typed.loginID,
                seat: try self.seat(typed.seat, context),
                move: typed.move,
                force: typed.force
            )
            return reply(result, user: result.user.id)
        case .currentUser:
            let typed = try CurrentUserRequest(params: params)
            return reply(self.registry.view.currentUser(seat: try self.seat(typed.seat, context)))
        case .listUsers:
            // A list too long to answer on the event loop (see `answerRead`): taken from the published state here, off
            // the loop, and written a piece at a time.
            let typed = try ListUsersRequest(params: params)
            let result = try self.registry.view.listUsers(limit: typed.limit.map(Int.init), after: typed.after)
            return (.streamed(ListLineChunks(id: id, result: result)), nil, nil)
        case .switchUser:
            let typed = try SwitchUserRequest(params: params)
            let result = try await self.registry.switchUser(
                to: typed.userID,
                ifGeneration: typed.ifGeneration,
                seat: try self.seat(typed.seat, context),
                move: typed.move,
                force: typed.force
            )
            return reply(result, user: result.user.id)
        case .logout:
            let typed = try LogoutRequest(params: params)
            let result = try await self.registry.logout(
                userID: typed.userID,
                seat: try self.seat(typed.seat, context),
                force: typed.force
            )
            return reply(result, user: result.user.id)
        case .removeUser:
            let typed = try RemoveUserRequest(params: params)
            return reply(try await self.registry.removeUser(typed.userID, force: typed.force), user: typed.userID)
        case .accessToken:
            let typed = try AccessTokenRequest(params: params)
            let result = try await self.registry.accessToken(
                userID: typed.userID,
                minValidSeconds: typed.minValid ?? AccessTokenRequest.defaultMinimumValidity,
                seat: try self.seat(typed.seat, context)
            )
            return reply(result, user: result.userID, tokenExpiresAt: result.expiresAt)
        case .refresh:
            let typed = try RefreshRequest(params: params)
            let result = try await self.registry.refresh(userID: typed.userID, seat: try self.seat(typed.seat, context))
            return reply(result, user: result.userID)
        case .createAPIKey:
            let typed = try CreateAPIKeyRequest(params: params)
            let result = try await self.registry.createAPIKey(name: typed.name, userID: typed.userID)
            return reply(result, user: result.userID)
        case .listAPIKeys:
            let typed = try ListAPIKeysRequest(params: params)
            return reply(try await self.registry.listAPIKeys(userID: typed.userID))
        case .deleteAPIKey:
            let typed = try DeleteAPIKeyRequest(params: params)
            let result = try await self.registry.deleteAPIKey(name: typed.name, userID: typed.userID)
            return reply(result, user: result.userID)
        case .jwks:
            _ = try JWKSRequest(params: params)
            return reply(JWKSRequest.Result(keys: await self.registry.publicKeys()))
        case .subscribe:
            let typed = try SubscribeRequest(params: params)
            let filter = typed.events.map(Set.init)
            let logger = context.logger
            let close = context.close
            for seat in typed.seats ?? [] where !self.registry.view.isKnown(seat: seat) {
                throw SessionError.seatNotFound(seat)
            }
            let (generation, subscription) = await self.registry.subscribeLines(
                filter: filter,
                seats: typed.seats.map(Set.init),
                maximumPendingBytes: self.settings.limits.maximumPendingBytes,
                onOverflow: {
                    logger.warning("subscriber stopped reading; disconnecting it (limits.max_pending_bytes)")
                    close()
                }
            )
            let subscribed = typed.events ?? EventName.subscribable
            let response = LineCodec.encodeResult(
                id: id,
                SubscribeRequest.Result(generation: generation, subscribed: subscribed)
            )
            return (.subscribed(response: response, subscription: subscription), nil, nil)
        case .listSeats, .inhibit, .release, .listLeases:
            return try await self.answerSeatsAndLeases(method, request, context)
        case .status:
            _ = try StatusRequest(params: params)
            let snapshot = await self.registry.snapshot()
            let uptime = ContinuousClock.now - self.startedAt
            return reply(
                StatusRequest.Result(
                    version: self.version,
                    uptimeSeconds: uptime.components.seconds,
                    generation: snapshot.generation,
                    users: StatusRequest.UserCounts(loggedIn: snapshot.loggedIn, loggedOut: snapshot.loggedOut),
                    activeUserID: snapshot.activeUserID,
                    connections: self.connectionCount(),
                    refresh: snapshot.refresh
                )
            )
        }
    }
}
