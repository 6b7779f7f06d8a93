import UsherProtocol

/// Who locked a seat, or unlocked it (the `by` of `seat_locked` and `seat_unlocked`).
package enum SeatLockAgent: String, Sendable, Hashable, CaseIterable {
    /// `lock_seat` (a kiosk, `usher lock`).
    case usherd
    /// logind: the session the seat follows was locked (`Lock`, `LockedHint`), or unlocked.
    case logind
    /// `unlock` with the active user's PIN (unlocks only).
    case pin
}

/// A seat's lock as `lock_seat` and `unlock` answer it.
package struct SeatLockState: Sendable, Hashable {
    package var seat: String
    /// Nil: unlocked.
    package var lockedBy: SeatLockAgent?
    /// `unlock`: whether a PIN was checked (and matched); false when the seat was not locked.
    package var pinChecked = false

    package init(seat: String, lockedBy: SeatLockAgent?, pinChecked: Bool = false) {
        self.seat = seat
        self.lockedBy = lockedBy
        self.pinChecked = pinChecked
    }
}

/// A user's PIN as stored: its slow salted hash, and the wrong PINs given in a row since it last matched.
package struct StoredPIN: Sendable, Hashable {
    package var hash: String
    package var failures: Int

    package init(hash: String, failures: Int) {
        self.hash = hash
        self.failures = failures
    }
}

/// Where seat locks and PINs are kept (the daemon's database: `AppDatabase+Pins`). A user's PIN goes with the user:
/// removing it from the device forgets the PIN.
package protocol SeatLockStore: Sendable {
    /// Every locked seat, with who locked it.
    func seatLocks() async throws -> [String: SeatLockAgent]
    /// Locks (`agent` non-nil) or unlocks a seat.
    func setSeatLock(_ agent: SeatLockAgent?, on seat: String, at time: Timestamp) async throws
    /// The user's PIN, nil when it has none.
    func storedPIN(of userID: String) async throws -> StoredPIN?
    /// Sets the user's PIN (its hash), with no wrong PINs counted.
    func setPINHash(_ hash: String, of userID: String, at time: Timestamp) async throws
    /// Counts one more wrong PIN in a row; answers the count (0: the user has no PIN any more).
    func recordPINFailure(of userID: String) async throws -> Int
    /// The PIN matched: the wrong ones before no longer count.
    func clearPINFailures(of userID: String) async throws
}

/// A slow salted hash for secrets a person types (the local provider's password hasher: scrypt).
package protocol SecretHasher: Sendable {
    func hash(_ secret: String) async throws -> String
    func verify(_ secret: String, against encoded: String) async -> Bool
}

/// What seat locks are kept and checked with: given to the registry once at start (`SessionRegistry.useSeatLocks`).
package struct SeatLockParts: Sendable {
    package var store: any SeatLockStore
    package var hasher: any SecretHasher

    package init(store: any SeatLockStore, hasher: any SecretHasher) {
        self.store = store
        self.hasher = hasher
    }
}
