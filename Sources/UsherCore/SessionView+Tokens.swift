import Synchronization
import UsherProtocol

/// The token answers read from the published state, on the event loop.
extension SessionView {
    /// The view's clock's time, for answers read beside it (narrowed tokens).
    package var now: Timestamp { self.clock.now() }

    /// The `access_token` answer, as `encode` writes it, for the user's (or the active user's) token when it stays
    /// valid for `min(minValid, L − 1 s)`, with the user it is for and its expiry; nil when only the registry can
    /// answer (a refresh is needed first, the user is logged out or unknown). The last answer is kept: a program
    /// asking in a loop gets the same bytes until the token or its remaining whole seconds change.
    package func freshTokenAnswer(
        userID: String?,
        seat: String? = nil,
        minValidSeconds: Int64,
        scope: SeatScope = .everywhere,
        encode: (IssuedToken) -> [UInt8]
    ) throws(SessionError) -> (userID: String, expiresAt: Timestamp, answer: [UInt8])? {
        let now = self.clock.now()
        return try self.published.withLock { published throws(SessionError) in
            let seat = seat ?? published.state.defaultSeat
            guard let id = userID ?? published.state.seats.user(on: seat),
                let user = published.state[id],
                user.state == .loggedIn, let tokens = user.tokens
            else { return nil }
            try Self.requireUnlocked(id, in: published)
            // Under the same lock as the token it answers with: the user cannot move between the check and the answer.
            if case .seats = scope {
                let about = userID == nil ? [seat] : published.state.seats.seat(of: id).map { [$0] } ?? []
                try scope.require(about)
            }
            let required = min(minValidSeconds * 1000, tokens.lifetimeMilliseconds - 1000)
            let remaining = tokens.expiresAt.millisecondsSinceEpoch - now.millisecondsSinceEpoch
            guard remaining > 0, remaining >= required else { return nil }
            let expiresIn = remaining / 1000
            if let cached = published.tokenAnswer, cached.expiresIn == expiresIn, cached.userID == id,
                cached.tokens == tokens
            {
                return (id, tokens.expiresAt, cached.bytes)
            }
            let bytes = encode(
                IssuedToken(
                    userID: id,
                    accessToken: tokens.accessToken,  // unpacked once for this answer
                    tokenType: tokens.tokenType,
                    expiresAt: tokens.expiresAt,
                    expiresIn: expiresIn
                )
            )
            published.tokenAnswer = TokenAnswerCache(userID: id, tokens: tokens, expiresIn: expiresIn, bytes: bytes)
            return (id, tokens.expiresAt, bytes)
        }
    }

    /// The logged-in user a token request is about (named, or the seat's active user), checked against `scope`; nil
    /// when there is none (the registry then answers, with the reason).
    package func loggedInUser(
        userID: String?,
        seat: String? = nil,
        scope: SeatScope = .everywhere
    ) throws(SessionError) -> String? {
        try self.published.withLock { published throws(SessionError) in
            let seat = seat ?? published.state.defaultSeat
            guard let id = userID ?? published.state.seats.user(on: seat), let user = published.state[id],
                user.state == .loggedIn, user.tokens != nil
            else { return nil }
            try Self.requireUnlocked(id, in: published)
            if case .seats = scope {
                try scope.require(userID == nil ? [seat] : published.state.seats.seat(of: id).map { [$0] } ?? [])
            }
            return id
        }
    }
}
