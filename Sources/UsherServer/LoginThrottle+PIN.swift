import UsherCore

/// The throttle as `unlock` uses it: a wrong PIN is a failed login of the seat's active user (its account's count and
/// the peer's), and a matching one a successful login; an unlock that checked no PIN (the seat was not locked) taught
/// nothing.
extension LoginThrottle {
    package func unlock(
        account: String?,
        peer: UInt32,
        _ body: () async throws -> SeatLockState
    ) async throws -> SeatLockState {
        let ticket = try self.begin(account: account, peer: peer)
        do {
            let result = try await body()
            await self.persist(self.finish(ticket, result.pinChecked ? .succeeded : .inconclusive))
            return result
        } catch {
            // Stored before the failure is answered: a daemon killed right after cannot forget it.
            let outcome: Outcome = if case .pinIncorrect = error as? SessionError { .failed } else { .inconclusive }
            await self.persist(self.finish(ticket, outcome))
            throw error
        }
    }
}
