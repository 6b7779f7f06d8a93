import UsherProtocol

/// When each logged-in user's tokens are refreshed (or retried), on the registry's one scheduler.
extension SessionRegistry {
    /// Exponential backoff after a transient failure: 1 s doubling to 5 min, less up to 10 % jitter.
    package static func backoffMilliseconds(failures: Int) -> ClosedRange<Int64> {
        let base = min(Int64(1000) << Int64(min(max(failures - 1, 0), 20)), 300_000)
        return (base - base / 10)...base
    }

    /// When the user's access token should be refreshed: `expires_at − margin − jitter`, with
    /// `margin = min(refresh_margin, L / 2)` and a jitter of up to 10 % of the margin.
    ///
    /// The jitter is drawn from a hash of the user id and the token's expiry rather than a random number generator:
    /// it spreads users just as well, and the deadline stays the same across a restart, so `next_refresh_at` does not
    /// move when the daemon does.
    package static func refreshDeadline(for tokens: TokenSet, userID: String, marginMilliseconds: Int64) -> Timestamp {
        let margin = min(marginMilliseconds, tokens.lifetimeMilliseconds / 2)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in userID.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        hash = (hash ^ UInt64(bitPattern: tokens.expiresAt.millisecondsSinceEpoch)) &* 0x0000_0100_0000_01b3
        hash ^= hash >> 29
        let jitter = Int64(hash % UInt64(margin / 10 + 1))
        return tokens.expiresAt.adding(milliseconds: -(margin + jitter))
    }

    func nextDeadline(for user: User, now: Timestamp) -> Timestamp? {
        guard user.state == .loggedIn, let tokens = user.tokens else { return nil }
        var deadline: Timestamp? = nil
        // An access token that already lasts until the refresh token expires cannot be extended by a refresh.
        if tokens.refreshToken != nil, tokens.refreshExpiresAt.map({ tokens.expiresAt < $0 }) ?? true {
            deadline = Self.refreshDeadline(
                for: tokens,
                userID: user.id,
                marginMilliseconds: self.configuration.refreshMarginMilliseconds
            )
        }
        if let end = Self.sessionEnd(of: tokens) { deadline = min(deadline ?? end, end) }
        return deadline
    }

    /// When a session ends by itself: at the refresh token's expiry, or, for a session without a refresh token, when
    /// its access token expires. Nil when the provider gave no expiry for the refresh token.
    static func sessionEnd(of tokens: TokenSet) -> Timestamp? {
        tokens.refreshExpiresAt ?? (tokens.refreshToken == nil ? tokens.expiresAt : nil)
    }

    func scheduleTimer(for user: User) async {
        var status = self.tokenStatus[user.id] ?? TokenStatus()
        if let retryAt = status.retryAt, status.failures > 0 {
            // A retry is pending for this same session: keep it.
            status.nextRefreshAt = retryAt
            self.tokenStatus[user.id] = status
            await self.scheduler.schedule(user.id, at: retryAt)
            return
        }
        guard let deadline = self.nextDeadline(for: user, now: self.clock.now()) else {
            status.nextRefreshAt = nil
            self.tokenStatus[user.id] = status
            await self.scheduler.cancel(user.id)
            return
        }
        status.nextRefreshAt = user.tokens?.refreshToken != nil ? deadline : nil
        self.tokenStatus[user.id] = status
        await self.scheduler.schedule(user.id, at: deadline)
    }
}
