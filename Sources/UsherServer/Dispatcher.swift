import Logging
import UsherCore
import UsherProtocol

/// Routes one decoded request to the registry and turns the outcome into a response line.
package struct Dispatcher: Sendable {
    /// What answering a request produced.
    package enum Outcome: Sendable {
        case response([UInt8])
        /// The connection subscribed: write the response, then forward the subscription's events.
        case subscribed(response: [UInt8], subscription: EventHub.Subscription)
    }

    /// What the dispatcher knows about the connection a request came on.
    package struct Context: Sendable {
        package var peer: PeerCredentials
        package var permissions: Set<Permission>
        package var logger: Logger

        package init(peer: PeerCredentials, permissions: Set<Permission>, logger: Logger) {
            self.peer = peer
            self.permissions = permissions
            self.logger = logger
        }
    }

    package let registry: SessionRegistry
    package let version: String
    package let startedAt: ContinuousClock.Instant
    package let connectionCount: @Sendable () -> Int
    package let settings: ServerSettings

    package init(
        registry: SessionRegistry,
        version: String,
        settings: ServerSettings,
        connectionCount: @escaping @Sendable () -> Int
    ) {
        self.registry = registry
        self.version = version
        self.startedAt = ContinuousClock.now
        self.settings = settings
        self.connectionCount = connectionCount
    }

    /// Answers one line. Never throws: every failure becomes an error response.
    package func handle(line: some Collection<UInt8>, context: Context) async -> Outcome {
        let request: Request
        do {
            request = try LineCodec.decodeRequest(line, maximumDepth: self.settings.limits.maximumJSONDepth)
        } catch {
            return .response(LineCodec.encodeError(id: error.id, error.error))
        }
        guard let method = Method(rawValue: request.method) else {
            return .response(
                LineCodec.encodeError(
                    id: request.id,
                    ResponseError(.unknownMethod, "unknown method \"\(request.method.prefix(64))\"")
                )
            )
        }
        if let required = Permission.required(for: method), !context.permissions.contains(required) {
            context.logger.notice(
                "request denied",
                metadata: [
                    "method": "\(method.rawValue)", "permission": "\(required.rawValue)",
                    "peer.uid": "\(context.peer.uid)", "peer.pid": "\(context.peer.pid)",
                ]
            )
            return .response(
                LineCodec.encodeError(
                    id: request.id,
                    ResponseError(.permissionDenied, "\(method.rawValue) needs the \"\(required.rawValue)\" permission")
                )
            )
        }
        do {
            return try await self.answer(method, request, context)
        } catch {
            return .response(
                LineCodec.encodeError(id: request.id, ResponseError(mapping: error, logger: context.logger))
            )
        }
    }

    private func answer(_ method: Method, _ request: Request, _ context: Context) async throws -> Outcome {
        let id = request.id
        let params = request.params
        func reply(_ result: some Encodable) -> Outcome { .response(LineCodec.encodeResult(id: id, result)) }
        switch method {
        case .hello:
            _ = try HelloRequest(params: params)
            return reply(
                HelloRequest.Result(
                    protocol: protocolVersion,
                    server: "usherd",
                    version: self.version,
                    peer: HelloRequest.Peer(uid: context.peer.uid, gid: context.peer.gid, pid: context.peer.pid),
                    permissions: context.permissions.sorted().map(\.rawValue)
                )
            )
        case .providers:
            _ = try ProvidersRequest(params: params)
            return reply(ProvidersRequest.Result(providers: await self.registry.providerInfos()))
        case .register:
            let typed = try RegisterRequest(params: params)
            return reply(
                try await self.registry.register(provider: typed.provider, email: typed.email, password: typed.password)
            )
        case .login:
            let typed = try LoginRequest(params: params)
            return reply(try await self.registry.login(provider: typed.provider, credentials: typed.credentials))
        case .currentUser:
            _ = try CurrentUserRequest(params: params)
            return reply(await self.registry.currentUser())
        case .listUsers:
            _ = try ListUsersRequest(params: params)
            return reply(await self.registry.listUsers())
        case .switchUser:
            let typed = try SwitchUserRequest(params: params)
            return reply(try await self.registry.switchUser(to: typed.userID, ifGeneration: typed.ifGeneration))
        case .logout:
            let typed = try LogoutRequest(params: params)
            return reply(try await self.registry.logout(userID: typed.userID))
        case .removeUser:
            let typed = try RemoveUserRequest(params: params)
            return reply(try await self.registry.removeUser(typed.userID))
        case .accessToken:
            let typed = try AccessTokenRequest(params: params)
            return reply(
                try await self.registry.accessToken(
                    userID: typed.userID,
                    minValidSeconds: typed.minValid ?? AccessTokenRequest.defaultMinimumValidity
                )
            )
        case .refresh:
            let typed = try RefreshRequest(params: params)
            return reply(try await self.registry.refresh(userID: typed.userID))
        case .createAPIKey:
            let typed = try CreateAPIKeyRequest(params: params)
            return reply(try await self.registry.createAPIKey(name: typed.name, userID: typed.userID))
        case .listAPIKeys:
            let typed = try ListAPIKeysRequest(params: params)
            return reply(try await self.registry.listAPIKeys(userID: typed.userID))
        case .deleteAPIKey:
            let typed = try DeleteAPIKeyRequest(params: params)
            return reply(try await self.registry.deleteAPIKey(name: typed.name, userID: typed.userID))
        case .jwks:
            _ = try JWKSRequest(params: params)
            return reply(JWKSRequest.Result(keys: await self.registry.publicKeys()))
        case .subscribe:
            let typed = try SubscribeRequest(params: params)
            let filter = typed.events.map(Set.init)
            let (generation, subscription) = await self.registry.subscribe(filter: filter)
            let subscribed = typed.events ?? EventName.allCases
            return .subscribed(
                response: LineCodec.encodeResult(
                    id: id,
                    SubscribeRequest.Result(generation: generation, subscribed: subscribed)
                ),
                subscription: subscription
            )
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
