import Logging
import UsherProtocol

/// Narrowed tokens (docs/least-privilege.md): a token for one audience and no more than some scopes, made by the
/// session's provider from the session, kept in `narrowed` per (user, narrowing), refreshed on the timer queue while
/// programs use it, and dropped when the user logs out, is removed, revoked or switched away from.
extension SessionRegistry {
    /// A narrowed token for the user valid for at least `min(minValid, its lifetime − 1 s)`: the one held, else a new
    /// one (single flight per user and narrowing).
    ///
    /// - Throws: `SessionError.notSupported` when the user's provider cannot narrow to it, and the errors of
    ///   `access_token`.
    package func narrowedAccessToken(
        userID: String?,
        minValidSeconds: Int64,
        narrowing requested: TokenNarrowing,
        seat requestedSeat: String? = nil,
        scope: SeatScope = .everywhere
    ) async throws -> IssuedToken {
        let seat = try self.seat(named: requestedSeat)
        let user = try self.loggedIn(userID, seat: seat)
        try scope.require(self.seatsAbout(user.id, namedUser: userID, seat: seat))
        try self.requireUnlocked(user.id)
        let key = try self.narrowedKey(of: user, requested)
        let token: NarrowedToken
        if let fresh = self.narrowed.fresh(key, minValidMilliseconds: minValidSeconds * 1000, now: self.clock.now()) {
            token = fresh
        } else {
            token = try await self.narrowedToken(for: key, minValidSeconds: minValidSeconds, used: true)
            // The user may have moved to another seat meanwhile: the answer is for the seats in scope only.
            try scope.require(self.seatsAbout(user.id, namedUser: userID, seat: seat))
        }
        return Self.issued(key.userID, token, narrowing: key.narrowing, now: self.clock.now())
    }

    /// A new narrowed token for `key` (for `dpop_proof`, when the program holds none).
    func narrowedAccessTokenValue(_ key: NarrowedTokenCache.Key) async throws -> NarrowedToken {
        try await self.narrowedToken(for: key, minValidSeconds: 0, used: true)
    }

    /// A narrowed token as handed out for `userID` at `now`.
    package static func issued(
        _ userID: String,
        _ token: NarrowedToken,
        narrowing: TokenNarrowing,
        now: Timestamp
    ) -> IssuedToken {
        IssuedToken(
            userID: userID,
            accessToken: token.accessToken,
            tokenType: token.tokenType,
            expiresAt: token.expiresAt,
            expiresIn: max(0, token.expiresAt.millisecondsSinceEpoch - now.millisecondsSinceEpoch) / 1000,
            audience: narrowing.audience,
            scopes: token.scopes ?? narrowing.scopes
        )
    }

    /// The cache key of `narrowing` for `user`, whose provider must be able to narrow.
    func narrowedKey(of user: User, _ narrowing: TokenNarrowing) throws(SessionError) -> NarrowedTokenCache.Key {
        guard self.providers[user.provider] is any TokenNarrowingProvider else {
            throw .notSupported("provider \(user.provider) cannot give narrowed tokens")
        }
        return NarrowedTokenCache.Key(userID: user.id, narrowing: narrowing)
    }

    /// A new narrowed token for `key`, stored and scheduled; concurrent callers for one key share one provider call.
    private func narrowedToken(
        for key: NarrowedTokenCache.Key,
        minValidSeconds: Int64,
        used: Bool
    ) async throws -> NarrowedToken {
        try self.requireRunning()
        guard self.narrowingFlights.start(key) else {
            return try await withCheckedThrowingContinuation { self.narrowingFlights.wait(key, $0) }
        }
        // As a refresh: on a task of its own, which the caller's cancellation does not reach (a narrowing by refresh
        // grant may rotate the session's refresh token half-way).
        let narrowing = Task { try await self.performNarrowing(key, minValidSeconds: minValidSeconds, used: used) }
        let result = await narrowing.result
        for waiter in self.narrowingFlights.land(key) { waiter.resume(with: result) }
        return try result.get()
    }

    private func performNarrowing(
        _ key: NarrowedTokenCache.Key,
        minValidSeconds: Int64,
        used: Bool
    ) async throws -> NarrowedToken {
        // The session's own token first, refreshed when needed: the narrowed one is made from it, and lasts no longer.
        _ = try await self.accessToken(userID: key.userID, minValidSeconds: minValidSeconds)
        guard let user = self.state[key.userID], user.state == .loggedIn, let session = user.session,
            let provider = self.providers[user.provider] as? any TokenNarrowingProvider
        else { throw SessionError.userLoggedOut(key.userID) }
        let grant: NarrowedGrant
        if try await provider.narrowingUsesRefreshToken(key.narrowing, session: session) {
            grant = try await self.narrowHoldingRefreshToken(key, provider)
        } else {
            grant = try await provider.narrow(session, to: key.narrowing)
        }
        // Across the provider call the user may have logged out or logged in again: such a token is not handed out.
        guard let current = self.state[key.userID], current.state == .loggedIn,
            current.subject == user.subject, current.provider == user.provider
        else { throw SessionError.userLoggedOut(key.userID) }
        let schedulerKey = self.narrowed.store(grant.token, for: key, used: used)
        let margin = min(self.configuration.refreshMarginMilliseconds, grant.token.lifetimeMilliseconds / 2)
        self.scheduler.schedule(schedulerKey, at: grant.token.expiresAt.adding(milliseconds: -margin))
        self.logger.debug(
            "narrowed token issued",
            metadata: ["user.id": "\(key.userID)", "audience": "\(key.narrowing.audience ?? "-")"]
        )
        return grant.token
    }

    /// A narrowing by refresh grant: no refresh of the session runs meanwhile, and a refresh token the provider
    /// rotated is stored as a refresh's is, before anything else uses the session's refresh token again.
    private func narrowHoldingRefreshToken(
        _ key: NarrowedTokenCache.Key,
        _ provider: any TokenNarrowingProvider
    ) async throws -> NarrowedGrant {
        await self.waitForRefreshTokenNarrowing(of: key.userID)
        while self.refreshFlights.isUnderWay(key.userID) {
            _ = try? await withCheckedThrowingContinuation { self.refreshFlights.wait(key.userID, $0) }
            await self.waitForRefreshTokenNarrowing(of: key.userID)
        }
        // No suspension since the loop: nothing uses the refresh token now.
        _ = self.refreshTokenNarrowings.start(key.userID)
        defer { for waiter in self.refreshTokenNarrowings.land(key.userID) { waiter.resume() } }
        guard let user = self.state[key.userID], user.state == .loggedIn, let session = user.session else {
            throw SessionError.userLoggedOut(key.userID)
        }
        let grant = try await provider.narrow(session, to: key.narrowing)
        if var refreshed = grant.session {
            if refreshed.tokens.refreshToken == nil {
                refreshed.tokens.refreshToken = session.tokens.refreshToken
            }
            _ = try await self.commitRefresh(refreshed, of: key.userID, replacing: session, provider: user.provider)
        }
        return grant
    }

    /// Waits while a narrowing uses the user's refresh token.
    func waitForRefreshTokenNarrowing(of userID: String) async {
        while self.refreshTokenNarrowings.isUnderWay(userID) {
            await withCheckedContinuation { self.refreshTokenNarrowings.wait(userID, $0) }
        }
    }

    /// The timer queue's deadline of a narrowed token: refreshed when a program used it since it was issued, else
    /// dropped (a program that stopped asking does not keep tokens alive).
    func narrowedDeadlineReached(_ schedulerKey: String) async {
        guard self.lifecycle == .running, let (key, token, used) = self.narrowed.entry(forSchedulerKey: schedulerKey)
        else { return }
        guard used else {
            self.narrowed.remove(key)
            return
        }
        do {
            // Made from a session token that outlasts the margin twice: a narrowed token never outlives the session's,
            // so one made from a session about to be refreshed would be due again at once.
            let minimum = 2 * self.configuration.refreshMarginMilliseconds / 1000
            _ = try await self.narrowedToken(for: key, minValidSeconds: minimum, used: false)
        } catch {
            let now = self.clock.now()
            self.logger.warning(
                "could not refresh a narrowed token",
                metadata: ["user.id": "\(key.userID)", "error": "\(error)"]
            )
            // Kept while it is valid, and tried again; a program that asks meanwhile makes a new one.
            let retry = now.adding(milliseconds: 30_000)
            if retry < token.expiresAt, self.narrowed.current(key) != nil {
                self.scheduler.schedule(schedulerKey, at: retry)
            } else {
                self.narrowed.remove(key)
            }
        }
    }

    /// Drops a user's narrowed tokens and their timers.
    func dropNarrowedTokens(of userID: String) {
        guard self.narrowed.hasEntries(of: userID) else { return }
        for schedulerKey in self.narrowed.removeAll(of: userID) { self.scheduler.cancel(schedulerKey) }
    }
}
