/// `dpop_proof`: proofs signed with the key a session's tokens are bound to (RFC 9449).
extension SessionRegistry {
    /// A DPoP proof for `method` `url`, with `ath` for the user's current access token, signed with the session's key.
    ///
    /// The token is the one held now, not refreshed first: a program asks `access_token` for the token (which refreshes
    /// it when needed), then for the proof. The answer says when that token expires, so that a program whose token was
    /// refreshed in between can tell.
    ///
    /// - Throws: `SessionError.notSupported` when the session's tokens are bearer tokens (its provider does not have
    ///   `dpop = true`), the errors of `access_token` for a user that is not there or not logged in.
    package func dpopProof(
        userID: String?,
        method: String,
        url: String,
        nonce: String?,
        narrowing: TokenNarrowing? = nil,
        seat requested: String? = nil,
        scope: SeatScope = .everywhere
    ) async throws -> IssuedProof {
        let seat = try self.seat(named: requested)
        let user = try self.loggedIn(userID, seat: seat)
        try scope.require(self.seatsAbout(user.id, namedUser: userID, seat: seat))
        try self.requireUnlocked(user.id)
        guard let tokens = user.tokens else { throw SessionError.userLoggedOut(user.id) }
        guard let key = tokens.dpopKey else {
            throw SessionError.notSupported(
                "the tokens of \(user.id) are bearer tokens: its provider \(user.provider) does not bind them to a "
                    + "DPoP key (dpop = true)"
            )
        }
        var token = (value: tokens.accessToken, type: tokens.tokenType, expiresAt: tokens.expiresAt)
        if let narrowing {
            // The narrowed token the program holds (made now if it has none): the proof names that one.
            let cacheKey = try self.narrowedKey(of: user, narrowing)
            let narrowed: NarrowedToken
            if let held = self.narrowed.current(cacheKey), held.expiresAt > self.clock.now() {
                narrowed = held
            } else {
                narrowed = try await self.narrowedAccessTokenValue(cacheKey)
            }
            token = (narrowed.accessToken, narrowed.tokenType, narrowed.expiresAt)
        }
        guard token.type == "DPoP" else {
            throw SessionError.notSupported(
                "the narrowed tokens of \(user.id) are bearer tokens: there is nothing to prove"
            )
        }
        // Signing awaits jwt-kit's key collection: the registry's state may change meanwhile, but nothing below reads
        // it again (the proof is of the token taken above).
        let proof = try await key.proof(
            method: method,
            url: url,
            nonce: nonce,
            accessToken: token.value,
            issuedAt: self.clock.now()
        )
        return IssuedProof(userID: user.id, proof: proof, accessTokenExpiresAt: token.expiresAt)
    }
}
