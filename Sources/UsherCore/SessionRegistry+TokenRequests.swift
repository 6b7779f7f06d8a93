/// Tokens handed out on request: `access_token` (refreshed first when the held one is not fresh enough) and
/// `refresh`, which at most one provider call a second per user answers (`+Tokens` does the refreshing).
extension SessionRegistry {

    /// A valid access token for the user: returned at once when it stays valid for `min(minValid, L − 1 s)`, else
    /// refreshed first.
    package func accessToken(
        userID: String?,
        minValidSeconds: Int64,
        seat requested: String? = nil,
        scope: SeatScope = .everywhere
    ) async throws -> IssuedToken {
        let seat = try self.seat(named: requested)
        let user = try self.loggedIn(userID, seat: seat)
        try scope.require(self.seatsAbout(user.id, namedUser: userID, seat: seat))
        try self.requireUnlocked(user.id)
        guard var tokens = user.tokens else { throw SessionError.userLoggedOut(user.id) }
        let now = self.clock.now()
        let required = min(minValidSeconds * 1000, tokens.lifetimeMilliseconds - 1000)
        let remaining = tokens.expiresAt.millisecondsSinceEpoch - now.millisecondsSinceEpoch
        if remaining <= 0 || remaining < required {
            // A session without a refresh token cannot be extended: its token is good until it expires, and then the
            // session is over (the scheduler logs the user out at that moment).
            guard tokens.hasRefreshToken else {
                guard remaining > 0 else { throw SessionError.userLoggedOut(user.id) }
                return self.tokenResult(user.id, tokens)
            }
            do {
                tokens = try await self.refreshTokens(of: user.id)
            } catch {
                // The user stays logged in through a transient failure, a provider that refuses our configuration or
                // tokens that could not be stored; the stored token is still good if it has not expired. (State may
                // have changed across the await: read it again.)
                guard !(error is SessionError), let current = self.state[user.id], current.state == .loggedIn,
                    let stored = current.tokens, stored.expiresAt > self.clock.now()
                else { throw error }
                tokens = stored
            }
            // The user may have moved to another seat, or the seat been locked, across the refresh: the answer is for
            // the seats in scope, unlocked, only.
            try scope.require(self.seatsAbout(user.id, namedUser: userID, seat: seat))
            try self.requireUnlocked(user.id)
        }
        return self.tokenResult(user.id, tokens)
    }

    private func tokenResult(_ userID: String, _ tokens: TokenSet) -> IssuedToken {
        let remaining = max(0, tokens.expiresAt.millisecondsSinceEpoch - self.clock.now().millisecondsSinceEpoch)
        return IssuedToken(
            userID: userID,
            accessToken: tokens.accessToken,
            tokenType: tokens.tokenType,
            expiresAt: tokens.expiresAt,
            expiresIn: remaining / 1000
        )
    }

    /// Refreshes the user's tokens now, unless a refresh less than a second old produced the tokens the user holds:
    /// then answers with those, without calling the provider, rotating the refresh token or writing to disk (a peer
    /// looping `refresh` must not turn each request into a provider call and a commit).
    package func refresh(
        userID: String?,
        seat requested: String? = nil,
        scope: SeatScope = .everywhere
    ) async throws -> RefreshedTokens {
        let seat = try self.seat(named: requested)
        let user = try self.loggedIn(userID, seat: seat)
        try scope.require(self.seatsAbout(user.id, namedUser: userID, seat: seat))
        if let tokens = user.tokens, self.tokenStatus[user.id]?.unstored == nil,
            self.recentRefreshes.isFresh(user.id, issuedAt: tokens.issuedAt, now: self.clock.now())
        {
            return RefreshedTokens(userID: user.id, accessTokenExpiresAt: tokens.expiresAt)
        }
        let tokens = try await self.refreshTokens(of: user.id)
        return RefreshedTokens(userID: user.id, accessTokenExpiresAt: tokens.expiresAt)
    }

    /// Remembers that a refresh produced `tokens` (see `refresh`).
    func rememberRefresh(of userID: String, _ tokens: TokenSet) {
        self.recentRefreshes.remember(userID, issuedAt: tokens.issuedAt, now: self.clock.now())
    }
}
