import UsherProtocol

/// Tokens: handing them out, refreshing them (single flight, backoff, revocation).
extension SessionRegistry {
    /// The in-memory refresh state of a logged-in user (not persisted: rebuilt from expiries at start).
    struct TokenStatus {
        var refreshing = false
        var failures = 0
        var retryAt: Timestamp?
        var lastError: ErrorCode?
        var nextRefreshAt: Timestamp?
    }

    /// A valid access token for the user: returned at once when it stays valid for `min(minValid, L − 1 s)`, else
    /// refreshed first.
    package func accessToken(userID: String?, minValidSeconds: Int64) async throws -> AccessTokenRequest.Result {
        let user = try self.loggedIn(userID)
        guard var tokens = user.tokens else { throw SessionError.userLoggedOut(user.id) }
        let now = self.clock.now()
        let required = min(minValidSeconds * 1000, tokens.lifetimeMilliseconds - 1000)
        let remaining = tokens.expiresAt.millisecondsSinceEpoch - now.millisecondsSinceEpoch
        if remaining <= 0 || remaining < required {
            // A session without a refresh token cannot be extended: its token is good until it expires, and then the
            // session is over (the scheduler logs the user out at that moment).
            guard tokens.refreshToken != nil else {
                guard remaining > 0 else { throw SessionError.userLoggedOut(user.id) }
                return self.tokenResult(user.id, tokens)
            }
            do {
                tokens = try await self.refreshTokens(of: user.id)
            } catch ProviderError.unavailable(let message) {
                // The user stays logged in; the stored token is still good if it has not expired.
                guard let stored = self.users[user.id]?.tokens, stored.expiresAt > self.clock.now() else {
                    throw ProviderError.unavailable(message)
                }
                tokens = stored
            }
        }
        return self.tokenResult(user.id, tokens)
    }

    private func tokenResult(_ userID: String, _ tokens: TokenSet) -> AccessTokenRequest.Result {
        let remaining = max(0, tokens.expiresAt.millisecondsSinceEpoch - self.clock.now().millisecondsSinceEpoch)
        return AccessTokenRequest.Result(
            userID: userID,
            accessToken: tokens.accessToken,
            tokenType: "Bearer",
            expiresAt: tokens.expiresAt,
            expiresIn: remaining / 1000
        )
    }

    package func refresh(userID: String?) async throws -> RefreshRequest.Result {
        let user = try self.loggedIn(userID)
        let tokens = try await self.refreshTokens(of: user.id)
        return RefreshRequest.Result(userID: user.id, accessTokenExpiresAt: tokens.expiresAt)
    }

    /// Called by the scheduler when a user's deadline comes: the refresh token's own expiry ends the session without
    /// a network call; otherwise the access token is refreshed.
    package func deadlineReached(for userID: String) async {
        guard let user = self.users[userID], user.state == .loggedIn, let tokens = user.tokens else { return }
        let now = self.clock.now()
        if let end = Self.sessionEnd(of: tokens), end <= now {
            await self.expire(userID: userID, refreshToken: tokens.refreshToken)
            return
        }
        guard tokens.refreshToken != nil else { return }
        do {
            _ = try await self.refreshTokens(of: userID)
        } catch {
            // Failures are already handled (rescheduled, logged out or announced) inside the refresh.
        }
    }

    private func expire(userID: String, refreshToken: String?) async {
        do {
            try await self.mutate { draft in
                // The session may have been replaced or ended across the suspension that led here.
                guard let user = self.users[userID], user.state == .loggedIn,
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
            await self.scheduler.schedule(userID, at: self.clock.now().adding(milliseconds: 1000))
        }
    }

    /// Refreshes a user's tokens. Concurrent callers for the same user share one provider call (single flight).
    private func refreshTokens(of userID: String) async throws -> TokenSet {
        if self.refreshWaiters[userID] != nil {
            return try await withCheckedThrowingContinuation { self.refreshWaiters[userID, default: []].append($0) }
        }
        self.refreshWaiters[userID] = []
        let result: Result<TokenSet, any Error>
        do {
            result = .success(try await self.performRefresh(of: userID))
        } catch {
            result = .failure(error)
        }
        for waiter in self.refreshWaiters.removeValue(forKey: userID) ?? [] { waiter.resume(with: result) }
        return try result.get()
    }

    private func performRefresh(of userID: String) async throws -> TokenSet {
        guard let user = self.users[userID], user.state == .loggedIn, let session = user.session else {
            throw SessionError.userLoggedOut(userID)
        }
        guard session.tokens.refreshToken != nil else {
            throw ProviderError.unsupportedCredentials("the session of \(userID) cannot be refreshed")
        }
        guard let provider = self.providers[user.provider] else {
            throw ProviderError.unavailable("provider \(user.provider) is not configured")
        }
        self.tokenStatus[userID, default: TokenStatus()].refreshing = true
        defer { self.tokenStatus[userID]?.refreshing = false }

        let refreshed: RefreshedSession
        do {
            // Suspension: the user may log out, be removed or log in again meanwhile; checked below.
            refreshed = try await provider.refresh(session)
        } catch ProviderError.sessionRevoked(let message) {
            self.refreshesFailed += 1
            try await self.mutate { draft in
                guard let current = self.users[userID], current.state == .loggedIn,
                    current.tokens?.refreshToken == session.tokens.refreshToken
                else { return }
                self.endSession(of: current, reason: .sessionRevoked, in: &draft)
                draft.revocations = []
            }
            self.logger.notice(
                "session revoked by provider",
                metadata: ["user.id": "\(userID)", "reason": "\(message)"]
            )
            throw SessionError.userLoggedOut(userID)
        } catch ProviderError.unavailable(let message) {
            self.refreshesFailed += 1
            await self.scheduleRetry(of: userID, session: session, code: .providerUnavailable, message: message)
            throw ProviderError.unavailable(message)
        } catch {
            self.refreshesFailed += 1
            let code = ErrorCode.providerUnavailable
            await self.scheduleRetry(of: userID, session: session, code: code, message: "refresh failed")
            throw error
        }
        self.refreshesSucceeded += 1

        let applied: Bool
        do {
            (applied, _) = try await self.mutate { draft -> Bool in
                guard var current = self.users[userID], current.state == .loggedIn,
                    current.tokens?.refreshToken == session.tokens.refreshToken
                else { return false }
                var tokens = refreshed.tokens
                // A provider that does not rotate keeps the old refresh token and its expiry.
                if tokens.refreshToken == nil {
                    tokens.refreshToken = session.tokens.refreshToken
                    tokens.refreshExpiresAt = tokens.refreshExpiresAt ?? session.tokens.refreshExpiresAt
                }
                current.tokens = tokens
                current.providerData = refreshed.providerData ?? current.providerData
                draft.saved[userID] = current
                return true
            }
        } catch {
            // The provider answered but the new tokens could not be stored: keep the user's timer going.
            self.logger.error(
                "could not store refreshed tokens",
                metadata: ["user.id": "\(userID)", "error": "\(error)"]
            )
            await self.scheduleRetry(of: userID, session: session, code: .internal, message: "could not store tokens")
            throw error
        }
        guard applied, let tokens = self.users[userID]?.tokens else {
            // Late result for a session that no longer exists: discard it, and revoke what the provider just issued.
            _ = await self.revoke([
                (
                    user.provider,
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
        self.tokenStatus[userID]?.failures = 0
        self.tokenStatus[userID]?.retryAt = nil
        self.tokenStatus[userID]?.lastError = nil
        self.events.publish([
            Event(generation: self.generation, .tokenRefreshed(userID: userID, accessTokenExpiresAt: tokens.expiresAt))
        ])
        self.logger.debug("token refreshed", metadata: ["user.id": "\(userID)"])
        return tokens
    }

    private func scheduleRetry(of userID: String, session: ProviderSession, code: ErrorCode, message: String) async {
        guard let current = self.users[userID], current.state == .loggedIn,
            current.tokens?.refreshToken == session.tokens.refreshToken
        else { return }
        var status = self.tokenStatus[userID] ?? TokenStatus()
        status.failures += 1
        var retryAt = self.clock.now().adding(
            milliseconds: Int64.random(in: Self.backoffMilliseconds(failures: status.failures))
        )
        if let refreshExpiresAt = current.tokens?.refreshExpiresAt, refreshExpiresAt < retryAt {
            retryAt = refreshExpiresAt
        }
        status.retryAt = retryAt
        status.lastError = code
        status.nextRefreshAt = retryAt
        self.tokenStatus[userID] = status
        await self.scheduler.schedule(userID, at: retryAt)
        self.events.publish([
            Event(
                generation: self.generation,
                .refreshFailed(userID: userID, code: code, message: message, retryAt: retryAt)
            )
        ])
        self.logger.warning(
            "token refresh failed, will retry",
            metadata: ["user.id": "\(userID)", "error.code": "\(code)", "retry_at": "\(retryAt)"]
        )
    }
}
