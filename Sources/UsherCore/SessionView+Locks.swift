import Synchronization
import UsherProtocol

/// Seat locks as readers see them: published by the registry (`SessionRegistry+Locks`), checked on the event loop by
/// every read that hands out a token.
extension SessionView {
    /// Who locked the seat; nil when it is unlocked.
    package func lock(of seat: String) -> SeatLockAgent? {
        self.published.withLock { $0.locks[seat] }
    }

    /// Every locked seat.
    package var locks: [String: SeatLockAgent] { self.published.withLock { $0.locks } }

    /// Publishes a seat's lock (nil: unlocked).
    func publish(lock agent: SeatLockAgent?, on seat: String) {
        self.published.withLock { published in
            guard published.locks[seat] != agent else { return }
            published.locks[seat] = agent
            published.currentUserAnswer[seat] = nil
        }
    }

    /// Throws `seatLocked` when the user is the active user of a locked seat. Called under the view's lock, with the
    /// token it guards: the seat cannot be locked between the check and the answer.
    static func requireUnlocked(_ userID: String, in published: Published) throws(SessionError) {
        guard !published.locks.isEmpty, let seat = published.state.seats.seat(of: userID),
            published.locks[seat] != nil
        else { return }
        throw .seatLocked(seat: seat)
    }
}
