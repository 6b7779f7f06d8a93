import UsherProtocol

/// The deadline rules of tokens, as pure functions: when a session's access token is refreshed, when a session ends by
/// itself, and how long to wait after a failure. The registry, the refresh scheduler and the providers (an OIDC
/// discovery retry) all ask this one type.
package struct TokenDeadlines: Sendable, Hashable {
    /// `[tokens] refresh_margin`: how long before expiry a token is refreshed (capped at half its lifetime).
    package var refreshMarginMilliseconds: Int64

    package init(refreshMarginMilliseconds: Int64) {
        self.refreshMarginMilliseconds = refreshMarginMilliseconds
    }

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
    package func refreshDeadline(for tokens: TokenSet, userID: String) -> Timestamp {
        let margin = min(self.refreshMarginMilliseconds, tokens.lifetimeMilliseconds / 2)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in userID.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        hash = (hash ^ UInt64(bitPattern: tokens.expiresAt.millisecondsSinceEpoch)) &* 0x0000_0100_0000_01b3
        hash ^= hash >> 29
        let jitter = Int64(hash % UInt64(margin / 10 + 1))
        return tokens.expiresAt.adding(milliseconds: -(margin + jitter))
    }

    /// The user's next deadline: its refresh, or the end of its session if that comes first. Nil for a user without
    /// tokens, or whose session neither refreshes nor ends by itself.
    package func nextDeadline(for user: User) -> Timestamp? {
        guard user.state == .loggedIn, let tokens = user.tokens else { return nil }
        var deadline: Timestamp? = nil
        // An access token that already lasts until the refresh token expires cannot be extended by a refresh.
        if tokens.hasRefreshToken, tokens.refreshExpiresAt.map({ tokens.expiresAt < $0 }) ?? true {
            deadline = self.refreshDeadline(for: tokens, userID: user.id)
        }
        if let end = Self.sessionEnd(of: tokens) { deadline = min(deadline ?? end, end) }
        return deadline
    }

    /// When a session ends by itself: at the refresh token's expiry, or, for a session without a refresh token, when
    /// its access token expires. Nil when the provider gave no expiry for the refresh token.
    package static func sessionEnd(of tokens: TokenSet) -> Timestamp? {
        tokens.refreshExpiresAt ?? (!tokens.hasRefreshToken ? tokens.expiresAt : nil)
    }
}
