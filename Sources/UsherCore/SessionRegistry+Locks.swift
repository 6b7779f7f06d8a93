import UsherProtocol

/// Seat locks, PINs, and the seat that follows logind (`[seats] follow = "logind"`).
///
/// A locked seat keeps its active user, whose tokens (plain and narrowed) and DPoP proofs are refused with
/// `seat_locked` (`SessionView+Locks`), while its timers keep refreshing them: unlocking needs no network. usherd locks a
/// seat with `lock_seat`, logind when the session the seat follows is locked. The active user's PIN unlocks either;
/// logind's unlock undoes logind's lock only. Lock changes of a seat go through the seat's gate, in order with the
/// changes of its active user (a follow waiting for delay leases is applied before a lock asked for after it).
extension SessionRegistry {
    /// At start: locks and PINs are kept in `parts.store`; the locks stored are published.
    package func useSeatLocks(_ parts: SeatLockParts) async throws {
        self.seatLockParts = parts
        for (seat, agent) in try await parts.store.seatLocks() { self.view.publish(lock: agent, on: seat) }
    }

    /// `lock_seat`: locks the seat as usherd. A seat locked already stays as it is (and says who locked it).
    package func lockSeat(seat requested: String?, scope: SeatScope = .everywhere) async throws -> SeatLockState {
        try self.requireRunning()
        let seat = try self.seat(named: requested)
        try scope.require([seat])
        return try await self.inSeatOrder(seat) {
            if let agent = self.view.lock(of: seat) { return SeatLockState(seat: seat, lockedBy: agent) }
            return try await self.setLock(.usherd, on: seat, by: .usherd)
        }
    }

    /// `unlock`: unlocks the seat with its active user's PIN. A seat that is not locked is answered as it is, with
    /// no PIN checked. A wrong PIN counts; at `[seats] lock_after_pin_failures` in a row the user is logged out.
    package func unlock(
        seat requested: String?,
        pin: String,
        scope: SeatScope = .everywhere
    ) async throws
        -> SeatLockState
    {
        try self.requireRunning()
        let seat = try self.seat(named: requested)
        try scope.require([seat])
        return try await self.inSeatOrder(seat) {
            guard self.view.lock(of: seat) != nil else { return SeatLockState(seat: seat, lockedBy: nil) }
            guard let userID = self.state.seats.user(on: seat) else { throw SessionError.noActiveUser }
            guard let parts = self.seatLockParts, let stored = try await parts.store.storedPIN(of: userID) else {
                throw SessionError.pinNotSet(userID: userID)
            }
            // Suspension: the hash is slow on purpose (the hashing pool). The seat's gate holds its lock and active
            // user meanwhile, and one unlock of the seat is checked at a time.
            guard await parts.hasher.verify(pin, against: stored.hash) else {
                let failures = try await parts.store.recordPINFailure(of: userID)
                self.logger.notice(
                    "wrong PIN",
                    metadata: ["seat": "\(seat)", "user.id": "\(userID)", "pin.failures": "\(failures)"]
                )
                if failures >= self.seatConfiguration.lockAfterPINFailures {
                    try await self.logOutAfterPINFailures(userID, store: parts.store)
                }
                throw SessionError.pinIncorrect(failures: failures)
            }
            if stored.failures > 0 { try await parts.store.clearPINFailures(of: userID) }
            var state = try await self.setLock(nil, on: seat, by: .pin)
            state.pinChecked = true
            return state
        }
    }

    /// `set_pin`: sets the PIN of the named user, or of the seat's active user. Only root and usherd's uid set the PIN
    /// of a user whose seat is locked (whoever sits at a locked seat must not replace the PIN that unlocks it).
    package func setPIN(
        _ pin: String,
        userID requested: String?,
        seat requestedSeat: String? = nil,
        ownership: Ownership,
        scope: SeatScope = .everywhere
    ) async throws -> String {
        try self.requireRunning()
        let seat = try self.seat(named: requestedSeat)
        let user = try self.resolve(requested, seat: seat)
        try scope.require(self.seatsAbout(user.id, namedUser: requested, seat: seat))
        try ownership.require(user, to: "set the PIN of")
        if ownership != .everyone { try self.requireUnlocked(user.id) }
        guard let parts = self.seatLockParts else { throw SessionError.notSupported("this daemon keeps no PINs") }
        // Suspension: hashing is slow on purpose; the user may be removed meanwhile, so it is looked up again.
        let hash = try await parts.hasher.hash(pin)
        guard self.state[user.id] != nil else { throw SessionError.userNotFound(user.id) }
        try await parts.store.setPINHash(hash, of: user.id, at: self.clock.now())
        self.logger.notice("PIN set", metadata: ["user.id": "\(user.id)"])
        return user.id
    }

    /// logind's active session on `seat` changed: its usher user (nil: the session has none) becomes the seat's active
    /// user. Delay leases hold it back as they hold any change; block leases do not (the desktop has switched already:
    /// their holders are told `lease_broken`). A user who is not logged in leaves the seat with no active user.
    package func follow(activeUser userID: String?, on seat: String) async throws {
        try self.requireRunning()
        let now = self.clock.now()
        let target = { () -> User? in
            guard let userID, let user = self.state[userID], user.state == .loggedIn else { return nil }
            return user
        }
        let changed = { () -> [String] in
            guard self.state.seats.user(on: seat) != target()?.id else { return [] }
            return [seat] + (target().flatMap { self.state.seats.seat(of: $0.id) }.map { [$0] } ?? [])
        }
        _ = try await self.holdingOff(force: true, scope: .everywhere, to: userID, seats: changed()) { admission in
            try await self.mutate { draft in
                let seats = changed()
                guard !seats.isEmpty else { return }
                try self.admit(admission, changing: seats)
                if let user = target() {
                    self.activate(user, at: now, on: seat, in: &draft)
                } else {
                    draft.vacatedSeats.insert(seat)
                    draft.changesGeneration = true
                }
            }
        }
        self.logger.info("seat follows logind", metadata: ["seat": "\(seat)", "user.id": "\(userID ?? "none")"])
    }

    /// logind locked or unlocked the session the seat follows. logind's unlock leaves a lock of usherd's in place.
    package func follow(locked: Bool, on seat: String) async throws {
        try self.requireRunning()
        _ = try await self.inSeatOrder(seat) { () -> SeatLockState? in
            switch (locked, self.view.lock(of: seat)) {
            case (true, nil): return try await self.setLock(.logind, on: seat, by: .logind)
            case (false, .logind): return try await self.setLock(nil, on: seat, by: .logind)
            default: return nil
            }
        }
    }

    /// The usher user a logind session stands for: the one `open_session` bound to it, else the one whose account
    /// `[seats.follow_map]` maps its Unix user to; nil when neither.
    package func followedUser(logindSession session: String, unixUser: String?) -> String? {
        if let bound = self.boundUser(logindSession: session) { return bound }
        guard let unixUser, let email = self.seatConfiguration.followMap[unixUser] else { return nil }
        let key = EmailAddress.key(email)
        return self.state.users.first { user in user.email.map(EmailAddress.key) == key }?.id
    }

    /// Throws `seatLocked` when the user is the active user of a locked seat.
    func requireUnlocked(_ userID: String) throws(SessionError) {
        guard let seat = self.state.seats.seat(of: userID), self.view.lock(of: seat) != nil else { return }
        throw .seatLocked(seat: seat)
    }

    /// Throws `seatLocked` when one of `seats` is locked by usherd with an active user: that user stays until the
    /// seat is unlocked. A locked seat with nobody on it takes a user (whose tokens the lock then holds back until its
    /// PIN). A lock of logind's does not hold the user in place: a greeter opening another person's session on the seat
    /// (`open_session`) comes before logind makes that session active, and the seat then follows it, lock and all.
    func refuseIfLocked(_ seats: [String]) throws(SessionError) {
        for seat in seats where self.view.lock(of: seat) == .usherd && self.state.seats.user(on: seat) != nil {
            throw .seatLocked(seat: seat)
        }
    }

    /// Runs `body` behind the seat's gate: after the changes of its active user asked for before, before those asked
    /// for after.
    private func inSeatOrder<T>(_ seat: String, _ body: () async throws -> T) async throws -> T {
        await self.enterGates([seat])
        defer { self.leaveGates([seat]) }
        return try await body()
    }

    /// Stores, publishes and announces a seat's lock (nil: unlocked). The caller holds the seat's gate.
    private func setLock(_ agent: SeatLockAgent?, on seat: String, by: SeatLockAgent) async throws -> SeatLockState {
        // Suspension: the seat's gate keeps every other lock change of this seat behind this one.
        try await self.seatLockParts?.store.setSeatLock(agent, on: seat, at: self.clock.now())
        self.view.publish(lock: agent, on: seat)
        let payload: Event.Payload = agent == nil ? .seatUnlocked(by: by.rawValue) : .seatLocked(by: by.rawValue)
        self.events.publish([Event(generation: self.view.generation, seat: seat, payload)])
        self.logger.notice(
            agent == nil ? "seat unlocked" : "seat locked",
            metadata: ["seat": "\(seat)", "by": "\(by)"]
        )
        return SeatLockState(seat: seat, lockedBy: agent)
    }

    /// Ends the session of a user whose seat was given too many wrong PINs, and starts its count again.
    private func logOutAfterPINFailures(_ userID: String, store: any SeatLockStore) async throws {
        let (_, draft) = try await self.mutate { draft in
            guard let user = self.state[userID], user.state == .loggedIn else { return }
            self.endSession(of: user, reason: .pinFailures, in: &draft)
        }
        try await store.clearPINFailures(of: userID)
        _ = await self.revoke(draft.revocations)
        self.logger.warning("too many wrong PINs: user logged out", metadata: ["user.id": "\(userID)"])
    }
}
