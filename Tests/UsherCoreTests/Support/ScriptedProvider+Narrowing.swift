import Synchronization
import UsherCore
import UsherProtocol

/// Narrowed tokens `narrowed-N`, valid as long as the session's token, or less.
extension ScriptedProvider: TokenNarrowingProvider {
    /// Makes narrowings wait, after they are counted, until `releaseNarrowings`.
    func holdNarrowings() {
        self.state.withLock { $0.holdingNarrowings = true }
    }

    func releaseNarrowings() {
        let held = self.state.withLock { state in
            state.holdingNarrowings = false
            defer { state.heldNarrowings = [] }
            return state.heldNarrowings
        }
        for continuation in held { continuation.resume() }
    }

    var narrowings: [TokenNarrowing] { self.state.withLock { $0.narrowings } }

    func narrowingUsesRefreshToken(_ narrowing: TokenNarrowing, session: ProviderSession) -> Bool { false }

    func narrow(_ session: ProviderSession, to narrowing: TokenNarrowing) async throws -> NarrowedGrant {
        let hold = self.state.withLock { state in
            state.narrowings.append(narrowing)
            return state.holdingNarrowings
        }
        if hold {
            await withCheckedContinuation { continuation in
                let resumeNow = self.state.withLock { state in
                    guard state.holdingNarrowings else { return true }
                    state.heldNarrowings.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
        let now = self.clock.now()
        let (count, lifetime) = self.state.withLock { ($0.narrowings.count, $0.accessLifetimeMilliseconds) }
        return NarrowedGrant(
            token: NarrowedToken(
                accessToken: "narrowed-\(count)",
                tokenType: "Bearer",
                issuedAt: now,
                expiresAt: min(now.adding(milliseconds: lifetime), session.tokens.expiresAt),
                scopes: narrowing.scopes
            )
        )
    }
}
