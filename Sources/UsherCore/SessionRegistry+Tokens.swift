import Logging
import UsherProtocol

/// Tokens: refreshing them (single flight, backoff, revocation); `+TokenRequests` hands them out.
///
/// A refresh is one atomic change: the provider's answer (and its pending write, such as the local provider's grant
/// rotation) is committed in the same transaction as the user's new tokens, and the old refresh token stays stored
/// until then. When that commit fails after the provider answered (disk full, I/O error), the answer is kept in memory
/// and storing it is retried: never refreshing again with the refresh token the answer replaced, which a rotating
/// provider would refuse.
extension SessionRegistry {
    /// How long to wait before refreshing again after the provider refused the daemon's client configuration
    /// (`invalid_client`): retrying sooner cannot help, and would only hammer the provider. A configuration reload
    /// retries at once.
    package static let misconfiguredRetryMilliseconds: Int64 = 3_600_000

    /// Every session of a user to revoke when it ends: the stored one, and a refreshed one not yet stored (whose
    /// refresh token a rotating provider considers the live one).
    func revocableSessions(of user: User) -> [(provider: String, session: ProviderSession)] {
        var sessions: [(provider: String, session: ProviderSession)] = []
        if let session = user.session { sessions.append((user.provider, session)) }
        if let unstored = self.tokenStatus[user.id]?.unstored {
            sessions.append(
                (
                    user.provider,
                    ProviderSession(
                        userID: user.id,
                        subject: user.subject,
                        tokens: unstored.tokens,
                        providerData: unstored.providerData ?? user.providerData
                    )
                )
            )
        }
        return sessions
    }

    /// Called by the scheduler when a user's deadline comes: the refresh token's own expiry ends the session without
    /// a network call; otherwise the access token is refreshed (or a refresh that could not be stored is stored).
    package func deadlineReached(for userID: String) async {
        if NarrowedTokenCache.isSchedulerKey(userID) {
            await self.narrowedDeadlineReached(userID)
            return
        }
        guard self.lifecycle == .running, let user = self.state[userID], user.state == .loggedIn,
            let tokens = user.tokens
        else { return }
        let now = self.clock.now()
        if let end = TokenDeadlines.sessionEnd(of: tokens), end <= now {
            await self.expire(userID: userID, refreshToken: tokens.refreshToken)
            return
        }
        guard tokens.hasRefreshToken else { return }
        do {
            _ = try await self.refreshTokens(of: userID)
        } catch {
            // Failures are already handled (rescheduled, logged out or announced) inside the refresh.
        }
    }

    /// After a configuration reload: users whose refresh the provider refused for our configuration are retried at
    /// once (the reload may have fixed it) instead of at the end of their long backoff.
    func retryMisconfiguredRefreshes() {
        let now = self.clock.now()
        for (userID, status) in self.tokenStatus.entries where status.lastError == .providerMisconfigured {
            guard let user = self.state[userID], user.state == .loggedIn, self.providers[user.provider] != nil else {
                continue
            }
            self.tokenStatus[userID]?.retryAt = now
            self.tokenStatus[userID]?.nextRefreshAt = now
            self.scheduler.schedule(userID, at: now)
        }
    }

    private func expire(userID: String, refreshToken: String?) async {
        do {
            try await self.mutate { draft in
                // The session may have been replaced or ended across the suspension that led here.
                guard let user = self.state[userID], user.state == .loggedIn,
                    user.tokens?.refreshToken == refreshToken
                else { return }
                self.endSession(of: user, reason: .refreshTokenExpired, in: &draft)
                // An expired refresh token cannot be revoked usefully; do not call the provider.
                draft.revocations = []
            }
            self.logger.info("session expired", metadata: ["user.id": "\(userID)"])
        } catch {
            self.logger.error(
                "could not record session expiry",
                metadata: ["user.id": "\(userID)", "error": "\(error)"]
            )
            self.scheduler.schedule(userID, at: self.clock.now().adding(milliseconds: 1000))
        }
    }

    // MARK: - Refresh

    /// Refreshes a user's tokens. Concurrent callers for the same user share one provider call (single flight).
    func refreshTokens(of userID: String) async throws -> TokenSet {
        try self.requireRunning()
        // A narrowing that uses the refresh token goes first: the two must never use one refresh token at once.
        await self.waitForRefreshTokenNarrowing(of: userID)
        guard self.refreshFlights.start(userID) else {
            return try await withCheckedThrowingContinuation { self.refreshFlights.wait(userID, $0) }
        }
        // The refresh runs on a task of its own, which the caller's cancellation (its connection closed) does not
        // reach: abandoning a refresh half-way could lose a refresh token the provider has already rotated, and
        // other callers wait for this one.
        let refresh = Task { try await self.performRefresh(of: userID) }
        let result = await refresh.result
        for waiter in self.refreshFlights.land(userID) { waiter.resume(with: result) }
        return try result.get()
    }

    private func performRefresh(of userID: String) async throws -> TokenSet {
        guard let user = self.state[userID], user.state == .loggedIn, let tokens = user.tokens else {
            throw SessionError.userLoggedOut(userID)
        }
        guard tokens.hasRefreshToken else {
            throw ProviderError.unsupportedCredentials("the session of \(userID) cannot be refreshed")
        }
        if let unstored = self.tokenStatus[userID]?.unstored, let session = user.session {
            // The provider answered an earlier refresh that could not be stored: store that answer now. Refreshing
            // with the old refresh token instead would be refused by a provider that rotated it.
            let stored = try await self.commitRefresh(unstored, of: userID, replacing: session, provider: user.provider)
            // Done, unless that answer is so old that its own access token is already due for a refresh.
            guard let current = self.state[userID],
                let deadline = self.configuration.deadlines.nextDeadline(for: current),
                deadline <= self.clock.now()
            else { return stored }
        }
        // Suspension above: read the user again.
        guard let user = self.state[userID], user.state == .loggedIn, let session = user.session else {
            throw SessionError.userLoggedOut(userID)
        }
        if let status = self.tokenStatus[userID], status.lastError == .providerMisconfigured,
            let retryAt = status.retryAt, retryAt > self.clock.now()
        {
            // Asking again before the backoff ends (or a reload) would only hammer the provider with the same refusal.
            throw ProviderError.misconfigured(
                "provider \(user.provider) refuses this daemon's client configuration (invalid_client); the next "
                    + "attempt is at \(retryAt), or at once after a configuration reload"
            )
        }
        guard let provider = self.providers[user.provider] else {
            throw ProviderError.unavailable("provider \(user.provider) is not configured")
        }
        self.tokenStatus[userID, default: TokenStatus()].refreshing = true
        defer { self.tokenStatus[userID]?.refreshing = false }

        var refreshed: RefreshedSession
        do {
            // Suspension: the user may log out, be removed or log in again meanwhile; checked when committing.
            refreshed = try await provider.refresh(session)
        } catch ProviderError.sessionRevoked(let message) {
            self.refreshesFailed += 1
            try await self.endRevokedSession(of: userID, refreshToken: session.tokens.refreshToken, reason: message)
            throw SessionError.userLoggedOut(userID)
        } catch ProviderError.misconfigured(let message) {
            self.refreshesFailed += 1
            let wait = Self.misconfiguredRetryMilliseconds
            self.scheduleRetry(
                of: userID,
                session: session,
                code: .providerMisconfigured,
                message: message,
                backoff: wait...wait
            )
            throw ProviderError.misconfigured(message)
        } catch ProviderError.rejected(let refusal, let message) {
            // Not an outage: the provider answered, and said no. Once may be a passing fault of the provider's; the
            // same refusal twice in a row (an account deleted there answers every refresh alike) ends the session.
            self.refreshesFailed += 1
            if self.tokenStatus[userID]?.lastRefusal == refusal {
                let reason = "the provider refused the refresh twice (\(refusal)): \(message)"
                try await self.endRevokedSession(of: userID, refreshToken: session.tokens.refreshToken, reason: reason)
                throw SessionError.userLoggedOut(userID)
            }
            self.scheduleRetry(of: userID, session: session, code: .providerRejected, message: message)
            self.tokenStatus[userID]?.lastRefusal = refusal
            throw ProviderError.rejected(refusal: refusal, message: message)
        } catch ProviderError.unavailable(let message) {
            self.refreshesFailed += 1
            self.scheduleRetry(of: userID, session: session, code: .providerUnavailable, message: message)
            self.tokenStatus[userID]?.lastRefusal = nil
            throw ProviderError.unavailable(message)
        } catch {
            self.refreshesFailed += 1
            let code = ErrorCode.providerUnavailable
            self.scheduleRetry(of: userID, session: session, code: code, message: "refresh failed")
            throw error
        }
        self.refreshesSucceeded += 1
        // A provider that does not rotate keeps the old refresh token and its expiry.
        if refreshed.tokens.refreshToken == nil {
            refreshed.tokens.refreshToken = session.tokens.refreshToken
            refreshed.tokens.refreshExpiresAt = refreshed.tokens.refreshExpiresAt ?? session.tokens.refreshExpiresAt
        }
        let stored = try await self.commitRefresh(refreshed, of: userID, replacing: session, provider: user.provider)
        // Only a provider call starts the second in which `refresh` answers with its tokens: an answer held since an
        // earlier call and stored now does not.
        self.rememberRefresh(of: userID, stored)
        return stored
    }

    /// Stores a refresh's answer (with its pending write) in one transaction, replacing `session`, and announces it.
    ///
    /// When the commit fails, the answer is kept in `TokenStatus.unstored` and storing it retried with backoff; when
    /// the store refuses the provider's pending write (its grant is gone), the session is over.
    func commitRefresh(
        _ refreshed: RefreshedSession,
        of userID: String,
        replacing session: ProviderSession,
        provider: String
    ) async throws -> TokenSet {
        let applied: Bool
        do {
            (applied, _) = try await self.mutate { draft -> Bool in
                guard var current = self.currentUser(userID, holding: session) else { return false }
                current.tokens = refreshed.tokens
                current.providerData = refreshed.providerData ?? current.providerData
                draft.saved[userID] = current
                draft.pendingWrites = refreshed.pendingWrite.map { [$0] } ?? []
                draft.refreshesCompleted.insert(userID)
                draft.events.append(
                    .tokenRefreshed(userID: userID, accessTokenExpiresAt: refreshed.tokens.expiresAt)
                )
                return true
            }
        } catch ProviderError.sessionRevoked(let message) {
            try await self.endRevokedSession(of: userID, refreshToken: session.tokens.refreshToken, reason: message)
            throw SessionError.userLoggedOut(userID)
        } catch {
            // The provider answered but the answer is not durable. Keep it to store again (the old tokens stay
            // stored meanwhile, and a crash now retries the old refresh token after the restart).
            if self.currentUser(userID, holding: session) != nil {
                self.tokenStatus[userID, default: TokenStatus()].unstored = refreshed
            }
            self.scheduleRetry(
                of: userID,
                session: session,
                code: .internal,
                message: "the refreshed tokens could not be stored",
                detail: "\(error)"
            )
            throw error
        }
        guard applied, let tokens = self.state[userID]?.tokens else {
            // Late result for a session that no longer exists: discard it, and revoke what the provider just issued.
            _ = await self.revoke([
                (
                    provider,
                    ProviderSession(
                        userID: userID,
                        subject: session.subject,
                        tokens: refreshed.tokens,
                        providerData: refreshed.providerData
                    )
                )
            ])
            throw SessionError.userLoggedOut(userID)
        }
        self.logger.debug("token refreshed", metadata: ["user.id": "\(userID)"])
        return tokens
    }

    /// The user, if still logged in with the session that `session` is (the same refresh token): a change computed
    /// for that session must not apply to a newer one, or to a user who logged out meanwhile.
    private func currentUser(_ userID: String, holding session: ProviderSession) -> User? {
        guard let user = self.state[userID], user.state == .loggedIn,
            user.tokens?.refreshToken == session.tokens.refreshToken
        else { return nil }
        return user
    }

    /// Logs out a user whose refresh token the provider (or the store, for the local provider's grant) no longer
    /// accepts, unless the session changed meanwhile.
    private func endRevokedSession(of userID: String, refreshToken: String?, reason: String) async throws {
        try await self.mutate { draft in
            guard let current = self.state[userID], current.state == .loggedIn,
                current.tokens?.refreshToken == refreshToken
            else { return }
            self.endSession(of: current, reason: .sessionRevoked, in: &draft)
            draft.revocations = []
        }
        self.logger.notice("session revoked by provider", metadata: ["user.id": "\(userID)", "reason": "\(reason)"])
    }

    /// Schedules the next attempt after a failure (`backoff`, else the exponential backoff), announces it with
    /// `refresh_failed`, and logs it: at error level when only an operator can fix it (the provider refuses our
    /// configuration, the database fails), else as a warning. `detail` (the underlying error) goes to the log only.
    private func scheduleRetry(
        of userID: String,
        session: ProviderSession,
        code: ErrorCode,
        message: String,
        backoff: ClosedRange<Int64>? = nil,
        detail: String? = nil
    ) {
        guard let current = self.state[userID], current.state == .loggedIn,
            current.tokens?.refreshToken == session.tokens.refreshToken
        else { return }
        var status = self.tokenStatus[userID] ?? TokenStatus()
        let now = self.clock.now()
        // An outage's failure between two background attempts (a caller's `access_token` or `refresh` while the
        // provider is unreachable) neither lengthens the backoff nor moves the retry already due: recovery once the
        // provider is back waits no longer for the callers having asked. Only the scheduled attempt backs off further.
        let pending = status.retryAt.flatMap { $0 > now ? $0 : nil }
        let keepsPending = backoff == nil && code == .providerUnavailable && pending != nil
        if !keepsPending { status.failures += 1 }
        var retryAt =
            keepsPending
            ? pending ?? now
            : now.adding(
                milliseconds: Int64.random(in: backoff ?? TokenDeadlines.backoffMilliseconds(failures: status.failures))
            )
        if let refreshExpiresAt = current.tokens?.refreshExpiresAt, refreshExpiresAt < retryAt {
            retryAt = refreshExpiresAt
        }
        status.retryAt = retryAt
        status.lastError = code
        status.nextRefreshAt = retryAt
        self.tokenStatus[userID] = status
        self.scheduler.schedule(userID, at: retryAt)
        self.events.publish([
            Event(
                generation: self.view.generation,
                .refreshFailed(userID: userID, code: code, message: message, retryAt: retryAt)
            )
        ])
        var metadata: [String: Logger.MetadataValue] = [
            "user.id": "\(userID)", "provider": "\(current.provider)", "error.code": "\(code)",
            "retry_at": "\(retryAt)",
        ]
        if let detail { metadata["error"] = "\(detail)" }
        switch code {
        case .providerMisconfigured:
            self.logger.error(
                """
                token refresh refused: the provider does not accept this daemon's client configuration (check the \
                client ID and secret, then reload); the user stays logged in
                """,
                metadata: metadata.merging(["reason": "\(message)"]) { current, _ in current }
            )
        case .internal:
            self.logger.error(
                "could not store refreshed tokens; keeping them in memory to store again",
                metadata: metadata
            )
        default:
            self.logger.warning("token refresh failed, will retry", metadata: metadata)
        }
    }
}
