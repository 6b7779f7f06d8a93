import UsherCore
import UsherProtocol

/// A pending write `AppDatabase.commit` knows how to perform inside the change's transaction.
protocol DatabaseWrite: PendingWrite {
    /// Performs the write; throwing rolls back the whole change it belongs to.
    func perform(in db: Connection) throws
}

/// The local provider's refresh-token rotation, deferred to the registry's commit of the refreshed tokens.
///
/// Why deferred: when the provider consumed the old grant in a transaction of its own and the registry stored the new
/// tokens in another, a crash between the two left the user holding a refresh token whose grant was gone (logged out
/// at the next refresh). Committed together, a crash leaves either the old tokens with the old grant or the new tokens
/// with the new grant.
package struct LocalGrantRotation: DatabaseWrite, Hashable {
    package var provider: String
    /// SHA-256 of the refresh token being replaced, and of its successor.
    package var oldHash: [UInt8]
    package var newHash: [UInt8]
    /// The grant must still be unexpired at this time.
    package var now: Timestamp

    package init(provider: String, oldHash: [UInt8], newHash: [UInt8], now: Timestamp) {
        self.provider = provider
        self.oldHash = oldHash
        self.newHash = newHash
        self.now = now
    }

    /// Copies the old grant (same account, session start and absolute expiry) to the new hash and deletes the old
    /// one. When the old grant is gone (revoked, already rotated, or expired), throws
    /// `ProviderError.sessionRevoked`, failing the whole change, so the registry logs the user out instead of storing
    /// tokens no grant backs.
    func perform(in db: Connection) throws {
        try db.execute(
            sql: """
                INSERT INTO local_refresh_token (token_hash, provider, subject, kind, email, session_started_at,
                  expires_at)
                SELECT ?, provider, subject, kind, email, session_started_at, expires_at FROM local_refresh_token
                WHERE token_hash = ? AND provider = ? AND expires_at > ?
                """,
            arguments: [self.newHash, self.oldHash, self.provider, self.now.millisecondsSinceEpoch]
        )
        guard db.changesCount == 1 else {
            throw ProviderError.sessionRevoked("the refresh token is revoked or expired")
        }
        try db.execute(
            sql: "DELETE FROM local_refresh_token WHERE token_hash = ? AND provider = ?",
            arguments: [self.oldHash, self.provider]
        )
    }
}
