import UsherProtocol

/// Login sessions bound to users (`open_session`, `close_session`), the account stage's `user_status`, and the
/// bound user of a logind session, which the seat follows (`boundUser(logindSession:)`).
///
/// The bindings are durable: each is written in the transaction of the change that makes its user active, and removed
/// in a change of its own; the registry keeps them in memory too (loaded by `load()`), so that the seat's follow code
/// asks without a store read.
extension SessionRegistry {
    /// The usher user bound to logind's session `logindSession` by `open_session` (the newest binding of that session),
    /// nil when none or when that user is no longer on the device.
    package func boundUser(logindSession: String) -> String? {
        guard let binding = self.sessionBindings.binding(logindSession: logindSession),
            self.state[binding.userID] != nil
        else { return nil }
        return binding.userID
    }

    /// The binding `id` as it is open now.
    package func sessionBinding(_ id: String) -> SessionBinding? { self.sessionBindings[id] }

    /// Loads the open bindings (from `load()`); a store without them (tests' stores) has none.
    func loadSessionBindings() async throws {
        guard let store = self.store as? any SessionBindingStore else { return }
        self.sessionBindings = SessionBindingTable(try await store.loadSessionBindings())
    }

    /// `open_session`: makes the logged-in user `reference` (an id, or an email) active on the seat, never breaking a
    /// lease (a block lease refuses it with `inhibited`, which names its holders), moving it from any other seat, and
    /// records the binding in the same transaction.
    package func openSession(
        user reference: String,
        seat requested: String? = nil,
        logindSession: String? = nil,
        service: String? = nil,
        peerUID: UInt32? = nil,
        ownerUID: UInt32? = nil,
        scope: SeatScope = .everywhere,
        ownership: Ownership = .everyone
    ) async throws -> (SessionBinding, UserChange) {
        try self.requireRunning()
        let seat = try self.seat(named: requested)
        let userID = try await self.sessionUserID(reference)
        // Suspension above: the user is checked again inside the change.
        let placement = Placement(seat: seat, move: true, force: false, scope: scope, peerUID: peerUID)
        try scope.require(self.seatsAbout(activating: userID, placement))
        let binding = SessionBinding(
            id: SessionBinding.newID(),
            userID: userID,
            seat: seat,
            logindSession: logindSession,
            service: service,
            peerUID: peerUID,
            createdAt: self.clock.now()
        )
        let (_, draft) = try await self.holdingOff(
            force: false,
            scope: scope,
            to: userID,
            seats: self.seatsChanged(activating: userID, placement)
        ) { admission in
            try await self.mutate { draft in
                try self.admit(activating: userID, placement, admission)
                guard let user = self.state[userID] else { throw SessionError.userNotFound(userID) }
                guard user.state == .loggedIn else { throw SessionError.userLoggedOut(userID) }
                try ownership.require(user, to: "open a login session of")
                // The person logging in owns the session from now on (the PAM module logged in as root for them).
                if let ownerUID, user.sessionUID != ownerUID {
                    var owned = draft.saved[userID] ?? user
                    owned.sessionUID = ownerUID
                    draft.saved[userID] = owned
                    draft.changesGeneration = true
                }
                if self.state.seats.user(on: binding.seat) != userID {
                    self.activate(user, at: binding.createdAt, on: seat, in: &draft)
                }
                draft.pendingWrites.append(SessionBindingWrite.open(binding))
            }
        }
        // Committed: the binding is durable, and now known to `boundUser` too.
        self.sessionBindings.insert(binding)
        self.logger.debug(
            "session opened",
            metadata: ["user.id": "\(userID)", "binding.id": "\(binding.id)", "seat": "\(binding.seat)"]
        )
        return (binding, try self.result(of: draft, for: userID))
    }

    /// `close_session`: does `onClose` to the binding's user (nothing when it is logged out or gone already), then
    /// ends the binding. A failing `logout` or `remove` (a block lease) leaves the binding open, so it can be retried.
    package func closeSession(
        _ id: String,
        onClose: CloseAction,
        ownership: Ownership = .everyone
    ) async throws -> (SessionBinding, Int64) {
        try self.requireRunning()
        guard let binding = self.sessionBindings[id] else { throw SessionError.bindingNotFound(id) }
        guard ownership.owns(binding.peerUID) else {
            throw SessionError.notYours(userID: binding.userID, action: "close the login session of")
        }
        switch onClose {
        case .keep:
            break
        case .logout:
            if self.state[binding.userID]?.state == .loggedIn { _ = try await self.logout(userID: binding.userID) }
        case .remove:
            if self.state[binding.userID] != nil { _ = try await self.removeUser(binding.userID) }
        }
        // Suspension above: another close of the same binding may have ended it meanwhile.
        guard self.sessionBindings[id] != nil else { throw SessionError.bindingNotFound(id) }
        let (_, draft) = try await self.mutate { draft in
            draft.pendingWrites.append(SessionBindingWrite.close(id: id))
        }
        self.sessionBindings.remove(id)
        self.logger.debug(
            "session closed",
            metadata: ["user.id": "\(binding.userID)", "binding.id": "\(id)", "on_close": "\(onClose.rawValue)"]
        )
        return (binding, draft.generation)
    }

    /// `user_status`: the user with this email (or the email of the Unix user `[unix_users]` serves as `unixUser`) as
    /// committed (logged in first, then the most recent login), without entering the actor: one indexed read of the
    /// store.
    package nonisolated func userStatus(
        email requested: String? = nil,
        unixUser: String? = nil
    ) async throws -> UserStatusRequest.Result {
        guard let store = self.store as? any SessionBindingStore else {
            throw SessionError.unsupported("this store keeps no session records")
        }
        guard let email = requested ?? unixUser.flatMap(store.email(ofUnixUser:)),
            let user = Self.preferred(try await store.users(withEmail: email))
        else { return UserStatusRequest.Result(status: "unknown") }
        let status = user.isLoggedIn ? "logged_in" : "logged_out"
        return UserStatusRequest.Result(
            status: status,
            userID: user.userID,
            email: user.email,
            ended: user.isLoggedIn ? nil : user.ended
        )
    }

    /// Records, inside a change that ends a user's session, why it ended (`user_status`'s `ended`).
    func recordEnding(of userID: String, reason: LogoutReason, in draft: inout Draft) {
        guard self.store is any SessionBindingStore else { return }
        draft.pendingWrites.append(
            SessionBindingWrite.ending(userID: userID, reason: reason.rawValue, at: self.clock.now())
        )
    }

    /// The user id `reference` names: a user on the device by id, else the logged-in (then most recently logged-in)
    /// user whose email it is.
    private func sessionUserID(_ reference: String) async throws -> String {
        if self.state[reference] != nil { return reference }
        guard reference.contains("@"), let store = self.store as? any SessionBindingStore,
            let user = Self.preferred(try await store.users(withEmail: reference))
        else { throw SessionError.userNotFound(reference) }
        return user.userID
    }

    private static func preferred(_ users: [EmailUser]) -> EmailUser? {
        users.max { a, b in
            if a.isLoggedIn != b.isLoggedIn { return !a.isLoggedIn }
            return (a.lastLoginAt ?? Timestamp(millisecondsSinceEpoch: 0))
                < (b.lastLoginAt ?? Timestamp(millisecondsSinceEpoch: 0))
        }
    }

    /// Refuses, before anything is committed, an authentication of another account than `placement.expectEmail`,
    /// revoking the provider's session it opened (`identity_mismatch`).
    func requireExpectedEmail(
        _ authentication: Authentication,
        at provider: any IdentityProvider,
        _ placement: Placement
    ) async throws {
        guard let expected = placement.expectEmail else { return }
        if let email = authentication.email, EmailAddress.key(email) == EmailAddress.key(expected) { return }
        _ = await self.revoke([(provider.name, authentication.session(userID: authentication.subject))])
        self.logger.notice(
            "login refused: another account than the one expected",
            metadata: ["provider": "\(provider.name)", "kind": "\(authentication.kind)"]
        )
        throw SessionError.identityMismatch(expected: expected, actual: authentication.email)
    }
}
