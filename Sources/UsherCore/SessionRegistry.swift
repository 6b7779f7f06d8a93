import Logging
import UsherProtocol

/// Tunables of the registry that come from configuration.
package struct RegistryConfiguration: Sendable {
    /// `[tokens] refresh_margin`: how long before expiry a token is refreshed (capped at half its lifetime).
    package var refreshMarginMilliseconds: Int64
    /// How long after start overdue refreshes are spread over, at most.
    package var startupSpreadMilliseconds: Int64

    package init(refreshMarginMilliseconds: Int64 = 300_000, startupSpreadMilliseconds: Int64 = 30_000) {
        self.refreshMarginMilliseconds = refreshMarginMilliseconds
        self.startupSpreadMilliseconds = startupSpreadMilliseconds
    }
}

/// The authoritative multi-user session state: which users are on the device, their states, which one is active,
/// their tokens, and when each token is refreshed.
///
/// Every change goes through one serialized section (`mutate`): it is computed from committed state, written to the
/// store in one transaction, applied in memory, and only then announced to subscribers. Reads never wait for a
/// change in progress; they see the last committed state.
package actor SessionRegistry {
    private(set) var users: [String: User] = [:]
    private var activeUserID: String?
    private(set) var generation: Int64 = 0
    private var gate = FIFOGate()
    var tokenStatus: [String: TokenStatus] = [:]
    var refreshWaiters: [String: [CheckedContinuation<TokenSet, any Error>]] = [:]
    var refreshesSucceeded: Int64 = 0
    var refreshesFailed: Int64 = 0
    private(set) var providers: [String: any IdentityProvider]
    private var providerOrder: [String]
    private var defaultProviderName: String
    private(set) var configuration: RegistryConfiguration

    private let store: any SessionStore
    let clock: any SessionClock
    let logger: Logger
    package nonisolated let events: EventHub
    package nonisolated let scheduler: RefreshScheduler

    package init(
        store: any SessionStore,
        providers: [any IdentityProvider],
        defaultProvider: String,
        configuration: RegistryConfiguration = RegistryConfiguration(),
        clock: any SessionClock = SystemClock(),
        events: EventHub = EventHub(),
        logger: Logger
    ) {
        self.store = store
        self.providers = Dictionary(providers.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.providerOrder = providers.map(\.name)
        self.defaultProviderName = defaultProvider
        self.configuration = configuration
        self.clock = clock
        self.events = events
        self.scheduler = RefreshScheduler(clock: clock)
        self.logger = logger
    }

    // MARK: - Start

    /// Loads the durable state, logs out users whose refresh token expired while the daemon was down, and schedules
    /// every other logged-in user's refresh (overdue ones spread over the next seconds).
    package func load() async throws {
        let persisted = try await self.store.loadSessions()
        self.generation = persisted.generation
        self.users = Dictionary(persisted.users.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        self.activeUserID = self.mostRecentlyActiveLoggedInUser()
        let now = self.clock.now()
        let expired = self.users.values.filter { user in
            user.state == .loggedIn && (user.tokens.flatMap(Self.sessionEnd).map { $0 <= now } ?? false)
        }
        if !expired.isEmpty {
            try await self.mutate { draft in
                for user in expired { self.endSession(of: user, reason: .refreshTokenExpired, in: &draft) }
            }
        }
        var overdue: [String] = []
        for user in self.users.values where user.state == .loggedIn {
            if let deadline = self.nextDeadline(for: user, now: now), deadline <= now {
                overdue.append(user.id)
            } else {
                await self.scheduleTimer(for: user)
            }
        }
        // Spread overdue refreshes so a restart with many users never becomes a refresh storm.
        let spread = min(self.configuration.startupSpreadMilliseconds, Int64(overdue.count) * 20 + 1000)
        for userID in overdue.shuffled() {
            let deadline = now.adding(milliseconds: Int64.random(in: 0...spread))
            self.tokenStatus[userID, default: TokenStatus()].nextRefreshAt = deadline
            await self.scheduler.schedule(userID, at: deadline)
        }
        self.logger.info(
            "loaded session state",
            metadata: [
                "generation": "\(self.generation)", "users": "\(self.users.count)",
                "users.overdue": "\(overdue.count)", "users.expired": "\(expired.count)",
            ]
        )
    }

    // MARK: - Providers

    package func providerInfos() -> [ProviderInfo] {
        self.providerOrder.compactMap { name in
            self.providers[name].map {
                ProviderInfo(
                    name: $0.name,
                    type: $0.type,
                    credentials: $0.credentialTypes,
                    default: $0.name == self.defaultProviderName
                )
            }
        }
    }

    /// Replaces the configured providers (configuration reload). Users of a provider that disappeared stay on the
    /// device; their refreshes fail until it returns. Refreshes a provider refused for the daemon's configuration are
    /// tried again at once.
    package func reconfigure(
        providers: [any IdentityProvider],
        defaultProvider: String,
        configuration: RegistryConfiguration
    ) async {
        self.providers = Dictionary(providers.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.providerOrder = providers.map(\.name)
        self.defaultProviderName = defaultProvider
        self.configuration = configuration
        await self.retryMisconfiguredRefreshes()
    }

    func provider(named name: String?) throws(SessionError) -> any IdentityProvider {
        let name = name ?? self.defaultProviderName
        guard let provider = self.providers[name] else { throw .providerNotFound(name) }
        return provider
    }

    package func publicKeys() -> [JWK] {
        self.providerOrder.compactMap { self.providers[$0] as? any KeyPublishing }.flatMap(\.publicKeys)
    }

    // MARK: - Reads

    package var currentGeneration: Int64 { self.generation }

    package func currentUser() -> CurrentUserRequest.Result {
        CurrentUserRequest.Result(
            generation: self.generation,
            user: self.activeUserID.flatMap { self.users[$0] }.map(self.info)
        )
    }

    package func listUsers() -> ListUsersRequest.Result {
        let ordered = self.users.values.sorted { $0.addedGeneration < $1.addedGeneration }
        return ListUsersRequest.Result(generation: self.generation, users: ordered.map(self.info))
    }

    package struct Snapshot: Sendable {
        package var generation: Int64
        package var loggedIn: Int
        package var loggedOut: Int
        package var activeUserID: String?
        package var activeUserLabel: String?
        package var refresh: StatusRequest.RefreshCounters
    }

    package func snapshot() async -> Snapshot {
        let loggedIn = self.users.values.count { $0.state == .loggedIn }
        let active = self.activeUserID.flatMap { self.users[$0] }
        return Snapshot(
            generation: self.generation,
            loggedIn: loggedIn,
            loggedOut: self.users.count - loggedIn,
            activeUserID: self.activeUserID,
            activeUserLabel: active.map { $0.email ?? $0.id },
            refresh: StatusRequest.RefreshCounters(
                scheduled: await self.scheduler.scheduledCount,
                nextAt: await self.scheduler.earliestDeadline(),
                succeeded: self.refreshesSucceeded,
                failed: self.refreshesFailed
            )
        )
    }

    /// Subscribes to events. The answer's generation and the subscription are taken together, without a suspension
    /// in between, so the subscriber receives exactly the changes after that generation.
    package func subscribe(filter: Set<EventName>?) -> (generation: Int64, subscription: EventHub.Subscription) {
        (self.generation, self.events.subscribe(filter: filter))
    }

    /// Subscribes a socket connection: events as encoded lines, bounded by `maximumPendingBytes` unsent.
    package func subscribeLines(
        filter: Set<EventName>?,
        maximumPendingBytes: Int,
        onOverflow: @escaping @Sendable () -> Void
    ) -> (generation: Int64, subscription: EventHub.LineSubscription) {
        let subscription = self.events.subscribeLines(
            filter: filter,
            maximumPendingBytes: maximumPendingBytes,
            onOverflow: onOverflow
        )
        return (self.generation, subscription)
    }

    private func info(_ user: User) -> UserInfo {
        let status = self.tokenStatus[user.id]
        let tokenState: TokenState
        if user.state == .loggedOut || user.tokens == nil {
            tokenState = .none
        } else if status?.refreshing == true {
            tokenState = .refreshing
        } else if status?.retryAt != nil {
            tokenState = .retrying
        } else {
            tokenState = .fresh
        }
        let loggedIn = user.state == .loggedIn
        return UserInfo(
            id: user.id,
            provider: user.provider,
            kind: user.kind,
            email: user.email,
            name: user.name,
            state: loggedIn ? .loggedIn : .loggedOut,
            active: user.id == self.activeUserID,
            createdAt: user.createdAt,
            lastLoginAt: user.lastLoginAt,
            lastActiveAt: user.lastActiveAt,
            accessTokenExpiresAt: loggedIn ? user.tokens?.expiresAt : nil,
            refreshTokenExpiresAt: loggedIn ? user.tokens?.refreshExpiresAt : nil,
            tokenState: tokenState,
            nextRefreshAt: loggedIn ? status?.nextRefreshAt : nil,
            retryAt: loggedIn ? status?.retryAt : nil,
            lastRefreshError: loggedIn ? status?.lastError : nil
        )
    }

    // MARK: - Changes

    /// What one change does, built from committed state and applied only after it is durable.
    struct Draft {
        var saved: [String: User] = [:]
        var deleted: Set<String> = []
        var events: [Event.Payload] = []
        /// Whether the set of users, a state or the active user changes (and with it the generation).
        var changesGeneration = false
        /// Set when a user becomes active through login or switch.
        var newlyActive: String?
        /// Sessions to revoke at their provider once the change is durable.
        var revocations: [(provider: String, session: ProviderSession)] = []
        /// Providers' writes committed in the same transaction (a refresh's grant rotation).
        var pendingWrites: [any PendingWrite] = []
    }

    /// Runs one change: `body` fills a draft from committed state; the draft is committed in one transaction, then
    /// applied and announced. Changes run one at a time, in arrival order.
    @discardableResult
    func mutate<T: Sendable>(_ body: (inout Draft) throws -> T) async throws -> (T, Draft) {
        if !self.gate.tryEnter() {
            await withCheckedContinuation { self.gate.enqueue($0) }
        }
        defer { self.gate.leave()?.resume() }

        var draft = Draft()
        let value = try body(&draft)
        let newGeneration = draft.changesGeneration ? self.generation + 1 : nil
        if let newGeneration, let newlyActive = draft.newlyActive {
            draft.saved[newlyActive]?.activeGeneration = newGeneration
        }
        guard newGeneration != nil || !draft.saved.isEmpty || !draft.deleted.isEmpty || !draft.pendingWrites.isEmpty
        else { return (value, draft) }

        // Suspension: the gate keeps other changes out; reads still see the committed state until we apply below.
        try await self.store.commit(
            SessionChange(
                generation: newGeneration,
                saved: Array(draft.saved.values),
                deleted: Array(draft.deleted),
                pendingWrites: draft.pendingWrites
            )
        )

        let previousActive = self.activeUserID
        for id in draft.deleted {
            self.users.removeValue(forKey: id)
            self.tokenStatus.removeValue(forKey: id)
        }
        for (id, user) in draft.saved {
            if self.users[id]?.tokens != user.tokens {
                // New tokens (a login, or a refresh, rotating or not) start with a clean refresh state: a pending retry
                // belonged to the old ones. Only the in-flight flag carries over.
                let refreshing = self.tokenStatus[id]?.refreshing ?? false
                self.tokenStatus[id] = TokenStatus(refreshing: refreshing)
            }
            self.users[id] = user
        }
        if let newGeneration { self.generation = newGeneration }
        if let newlyActive = draft.newlyActive {
            self.activeUserID = newlyActive
        } else if let previousActive, self.users[previousActive]?.state != .loggedIn {
            self.activeUserID = self.mostRecentlyActiveLoggedInUser()
        }
        var payloads = draft.events
        if self.activeUserID != previousActive {
            payloads.append(.activeUserChanged(previousUserID: previousActive, userID: self.activeUserID))
        }
        self.events.publish(payloads.map { Event(generation: self.generation, $0) })
        for id in draft.deleted { await self.scheduler.cancel(id) }
        for user in draft.saved.values {
            if user.state == .loggedIn {
                await self.scheduleTimer(for: user)
            } else {
                self.tokenStatus.removeValue(forKey: user.id)
                await self.scheduler.cancel(user.id)
            }
        }
        return (value, draft)
    }

    private func mostRecentlyActiveLoggedInUser() -> String? {
        self.users.values.filter { $0.state == .loggedIn }.max { $0.activeGeneration < $1.activeGeneration }?.id
    }

    /// The user a request names, or the active user when it names none.
    private func resolve(_ userID: String?) throws(SessionError) -> User {
        guard let id = userID ?? self.activeUserID else { throw .noActiveUser }
        guard let user = self.users[id] else { throw .userNotFound(id) }
        return user
    }

    func loggedIn(_ userID: String?) throws(SessionError) -> User {
        let user = try self.resolve(userID)
        guard user.state == .loggedIn, user.tokens != nil else { throw .userLoggedOut(user.id) }
        return user
    }

    /// Ends a user's session inside a change: an anonymous user is removed, any other user kept logged out.
    func endSession(of user: User, reason: LogoutReason, in draft: inout Draft) {
        draft.revocations += self.revocableSessions(of: user)
        draft.changesGeneration = true
        if user.isAnonymous {
            draft.deleted.insert(user.id)
            draft.events.append(.userRemoved(userID: user.id))
        } else {
            var loggedOut = user
            loggedOut.state = .loggedOut
            loggedOut.tokens = nil
            loggedOut.providerData = nil
            draft.saved[user.id] = loggedOut
            draft.events.append(.userLoggedOut(userID: user.id, reason: reason))
        }
    }

    /// Revokes sessions at their providers. Returns whether every revocation was confirmed.
    func revoke(_ revocations: [(provider: String, session: ProviderSession)]) async -> Bool {
        var confirmed = true
        for (providerName, session) in revocations {
            guard let provider = self.providers[providerName] else {
                confirmed = false
                continue
            }
            let revoked = await provider.revoke(session)
            if !revoked {
                self.logger.warning(
                    "provider did not confirm revocation",
                    metadata: ["user.id": "\(session.userID)", "provider": "\(providerName)"]
                )
            }
            confirmed = confirmed && revoked
        }
        return confirmed
    }

    // MARK: - Requests that change state

    package func register(
        provider name: String?,
        email: String,
        password: String
    ) async throws
        -> RegisterRequest.Result
    {
        let provider = try self.provider(named: name)
        guard let registering = provider as? any AccountRegistering else {
            throw ProviderError.unsupportedCredentials("provider \(provider.name) does not support registration")
        }
        let normalizedEmail = try await registering.register(email: email, password: password)
        return RegisterRequest.Result(provider: provider.name, email: normalizedEmail)
    }

    package func login(provider name: String?, credentials: [String: JSONValue]) async throws -> UserResult {
        let provider = try self.provider(named: name)
        let isAnonymous = credentials["type"]?.stringValue == CredentialType.anonymous
        if isAnonymous, let existing = try await self.activateExistingAnonymous(of: provider.name) {
            return existing
        }
        // Suspension: authentication may take a while (a slow KDF, a network round trip); state may change
        // meanwhile, so everything below re-reads it inside the change.
        let authentication = try await provider.authenticate(credentials: credentials)
        return try await self.open(authentication, at: provider, isAnonymous: isAnonymous)
    }

    /// Adds the user a provider authenticated (or logs a known one in again) and makes it active: the second half of
    /// `login`, shared with `login_wait`.
    func open(
        _ authentication: Authentication,
        at provider: any IdentityProvider,
        isAnonymous: Bool = false
    ) async throws -> UserResult {
        // Claims with control characters never reach the store, the log or systemd's status line.
        let authentication = try await self.acceptableClaims(authentication, at: provider)
        let now = self.clock.now()
        let userID = User.id(provider: provider.name, subject: authentication.subject)

        let (reused, draft) = try await self.mutate { draft -> Bool in
            if isAnonymous, let existing = self.loggedInAnonymous(of: provider.name), existing.id != userID {
                // Another anonymous login won the race: keep that user and drop the session just opened.
                draft.revocations.append(
                    (
                        provider.name,
                        ProviderSession(
                            userID: userID,
                            subject: authentication.subject,
                            tokens: authentication.tokens,
                            providerData: authentication.providerData
                        )
                    )
                )
                self.activate(existing, at: now, in: &draft)
                return true
            }
            let existing = self.users[userID]
            if let existing { draft.revocations += self.revocableSessions(of: existing) }
            var user =
                existing
                ?? User(
                    id: userID,
                    provider: provider.name,
                    subject: authentication.subject,
                    kind: authentication.kind,
                    email: nil,
                    name: nil,
                    state: .loggedOut,
                    addedGeneration: self.generation + 1,
                    createdAt: now,
                    lastLoginAt: nil,
                    lastActiveAt: nil,
                    activeGeneration: 0,
                    tokens: nil,
                    providerData: nil
                )
            let wasLoggedIn = existing?.state == .loggedIn
            user.kind = authentication.kind
            user.email = authentication.email ?? user.email
            user.name = authentication.name ?? user.name
            user.state = .loggedIn
            user.tokens = authentication.tokens
            user.providerData = authentication.providerData
            user.lastLoginAt = now
            draft.saved[userID] = user
            if self.activeUserID != userID {
                self.activate(user, at: now, in: &draft)
            }
            if !wasLoggedIn {
                draft.changesGeneration = true
                // The user as it is once this change applies: active (a login always makes it so), with its refresh
                // deadline.
                var info = self.info(draft.saved[userID] ?? user)
                info.active = true
                info.nextRefreshAt = user.tokens?.refreshToken != nil ? self.nextDeadline(for: user, now: now) : nil
                draft.events.append(.userLoggedIn(user: info))
            }
            return false
        }
        _ = await self.revoke(draft.revocations)
        self.logger.debug(
            "login",
            metadata: [
                "user.id": "\(reused ? self.activeUserID ?? userID : userID)", "provider": "\(provider.name)",
                "kind": "\(authentication.kind)",
            ]
        )
        let resultID = reused ? (self.activeUserID ?? userID) : userID
        guard let user = self.users[resultID] else { throw SessionError.userNotFound(resultID) }
        return UserResult(generation: self.generation, user: self.info(user))
    }

    private func loggedInAnonymous(of provider: String) -> User? {
        self.users.values.filter { $0.provider == provider && $0.isAnonymous && $0.state == .loggedIn }
            .max { $0.activeGeneration < $1.activeGeneration }
    }

    /// Anonymous login reuses the provider's logged-in anonymous user, if there is one, and makes it active.
    private func activateExistingAnonymous(of provider: String) async throws -> UserResult? {
        let now = self.clock.now()
        let (userID, _) = try await self.mutate { draft -> String? in
            guard let existing = self.loggedInAnonymous(of: provider) else { return nil }
            if self.activeUserID != existing.id { self.activate(existing, at: now, in: &draft) }
            return existing.id
        }
        guard let userID, let user = self.users[userID] else { return nil }
        return UserResult(generation: self.generation, user: self.info(user))
    }

    private func activate(_ user: User, at now: Timestamp, in draft: inout Draft) {
        var user = draft.saved[user.id] ?? user
        user.lastActiveAt = now
        draft.saved[user.id] = user
        draft.newlyActive = user.id
        draft.changesGeneration = true
    }

    package func switchUser(to userID: String, ifGeneration: Int64?) async throws -> UserResult {
        let now = self.clock.now()
        try await self.mutate { draft in
            if let ifGeneration, ifGeneration != self.generation {
                throw SessionError.conflict(expected: ifGeneration, actual: self.generation)
            }
            guard let user = self.users[userID] else { throw SessionError.userNotFound(userID) }
            guard user.state == .loggedIn else { throw SessionError.userLoggedOut(userID) }
            if self.activeUserID != userID { self.activate(user, at: now, in: &draft) }
        }
        guard let user = self.users[userID] else { throw SessionError.userNotFound(userID) }
        self.logger.debug("switch", metadata: ["user.id": "\(userID)"])
        return UserResult(generation: self.generation, user: self.info(user))
    }

    package func logout(userID requested: String?) async throws -> LogoutRequest.Result {
        let (snapshot, draft) = try await self.mutate { draft -> User in
            let user = try self.resolve(requested)
            if user.state == .loggedIn { self.endSession(of: user, reason: .requested, in: &draft) }
            return user
        }
        let revoked = draft.revocations.isEmpty ? false : await self.revoke(draft.revocations)
        self.logger.debug("logout", metadata: ["user.id": "\(snapshot.id)", "revoked": "\(revoked)"])
        var info = self.info(self.users[snapshot.id] ?? snapshot)
        if draft.deleted.contains(snapshot.id) {
            info.state = .removed
            info.active = false
            info.accessTokenExpiresAt = nil
            info.refreshTokenExpiresAt = nil
            info.tokenState = .none
            info.nextRefreshAt = nil
            info.retryAt = nil
            info.lastRefreshError = nil
        }
        return LogoutRequest.Result(generation: self.generation, user: info, revoked: revoked)
    }

    package func removeUser(_ userID: String) async throws -> RemoveUserRequest.Result {
        let (_, draft) = try await self.mutate { draft in
            guard let user = self.users[userID] else { throw SessionError.userNotFound(userID) }
            draft.revocations += self.revocableSessions(of: user)
            draft.deleted.insert(userID)
            draft.changesGeneration = true
            draft.events.append(.userRemoved(userID: userID))
        }
        _ = await self.revoke(draft.revocations)
        self.logger.debug("remove", metadata: ["user.id": "\(userID)"])
        return RemoveUserRequest.Result(generation: self.generation, userID: userID)
    }

    // MARK: - API keys

    private func apiKeyProvider(for userID: String?) throws -> (User, any APIKeyManaging) {
        let user = try self.loggedIn(userID)
        guard let provider = self.providers[user.provider] as? any APIKeyManaging, !user.isAnonymous else {
            throw SessionError.unsupported("API keys are not available for user \(user.id)")
        }
        return (user, provider)
    }

    package func createAPIKey(name: String, userID: String?) async throws -> CreateAPIKeyRequest.Result {
        let (user, provider) = try self.apiKeyProvider(for: userID)
        let (key, createdAt) = try await provider.createAPIKey(subject: user.subject, name: name)
        return CreateAPIKeyRequest.Result(userID: user.id, name: name, key: key, createdAt: createdAt)
    }

    package func listAPIKeys(userID: String?) async throws -> ListAPIKeysRequest.Result {
        let (user, provider) = try self.apiKeyProvider(for: userID)
        return ListAPIKeysRequest.Result(
            userID: user.id,
            apiKeys: try await provider.listAPIKeys(subject: user.subject)
        )
    }

    package func deleteAPIKey(name: String, userID: String?) async throws -> DeleteAPIKeyRequest.Result {
        let (user, provider) = try self.apiKeyProvider(for: userID)
        guard try await provider.deleteAPIKey(subject: user.subject, name: name) else {
            throw SessionError.apiKeyNotFound(name)
        }
        return DeleteAPIKeyRequest.Result(userID: user.id, name: name)
    }
}

extension SessionRegistry {
    /// Tells every subscriber the daemon is stopping, and ends their subscriptions.
    package func announceStopping() {
        self.events.finish(with: Event(generation: self.currentGeneration, .daemonStopping))
    }
}
