import UsherProtocol

/// Sessions: login (and its second half, shared with interactive logins), switch, logout, remove.
extension SessionRegistry {
    /// Logs a user in and makes them active on `seat` (nil: the default seat). A user active on another seat moves
    /// only with `move`; block leases on the seats it changes refuse it unless `force`.
    package func login(
        provider name: String?,
        credentials: [String: JSONValue],
        seat requested: String? = nil,
        move: Bool = false,
        force: Bool = false,
        scope: SeatScope = .everywhere,
        peerUID: UInt32? = nil,
        activate: Bool = true,
        expectEmail: String? = nil
    ) async throws -> UserChange {
        try self.requireRunning()
        let provider = try self.provider(named: name)
        let placement = Placement(
            seat: try self.seat(named: requested),
            move: move,
            force: force,
            scope: scope,
            peerUID: peerUID,
            activate: activate,
            expectEmail: expectEmail
        )
        // Refused before authenticating (which may cost a slow KDF or a round trip); checked again when it commits.
        try scope.require([placement.seat ?? self.state.defaultSeat])
        let isAnonymous = credentials["type"]?.stringValue == CredentialType.anonymous
        if isAnonymous, placement.activate, placement.expectEmail == nil,
            let existing = try await self.activateExistingAnonymous(of: provider.name, placement)
        {
            return existing
        }
        // Suspension: authentication may take a while (a slow KDF, a network round trip); state may change
        // meanwhile, so everything below re-reads it inside the change.
        let authentication = try await provider.authenticate(credentials: credentials)
        return try await self.open(authentication, at: provider, isAnonymous: isAnonymous, placement: placement)
    }

    /// Where a login or switch puts its user: the seat, whether a user active elsewhere moves, whether block leases
    /// are broken.
    struct Placement: Sendable {
        var seat: String?
        var move = false
        var force = false
        /// Where the peer's permission holds.
        var scope: SeatScope = .everywhere
        /// The uid of the peer that asked (recorded as the session's: `User.sessionUID`).
        var peerUID: UInt32?
        /// Whether the user becomes the seat's active user; false: logged in only (`pam_usher`'s auth stage).
        var activate = true
        /// The email the authenticated account must have, else `identity_mismatch` before anything is committed.
        var expectEmail: String?
    }

    /// The seats a change that makes `userID` active on `placement.seat` is about: that seat, and the seat the user
    /// is active on now (which a move takes it from).
    func seatsAbout(activating userID: String, _ placement: Placement) -> [String] {
        [placement.seat ?? self.state.defaultSeat] + (self.state.seats.seat(of: userID).map { [$0] } ?? [])
    }

    /// Admits, inside a change's body, a change that makes `userID` active as `placement` says; then checks that the
    /// user may go there.
    func admit(activating userID: String, _ placement: Placement, _ admission: SeatAdmission) throws {
        try self.admit(
            admission,
            changing: self.seatsChanged(activating: userID, placement),
            touching: self.seatsAbout(activating: userID, placement)
        )
        // A locked seat keeps its active user until it is unlocked (or logind moves it).
        try self.refuseIfLocked(self.seatsChanged(activating: userID, placement))
        if placement.activate { try self.checkPlacement(of: userID, placement) }
    }

    /// The seats a change that makes `userID` active on `placement.seat` changes (none when it is active there).
    func seatsChanged(activating userID: String, _ placement: Placement) -> [String] {
        let seat = placement.seat ?? self.state.defaultSeat
        guard placement.activate, self.state.seats.user(on: seat) != userID else { return [] }
        guard placement.move, let elsewhere = self.state.seats.seat(of: userID) else { return [seat] }
        return [seat, elsewhere]
    }

    /// Throws unless the user may become active on the seat: active on another one, only with `move`.
    private func checkPlacement(of userID: String, _ placement: Placement) throws(SessionError) {
        let seat = placement.seat ?? self.state.defaultSeat
        if let elsewhere = self.state.seats.seat(of: userID), elsewhere != seat, !placement.move {
            throw .userActiveElsewhere(userID: userID, seat: elsewhere)
        }
    }

    /// Adds the user a provider authenticated (or logs a known one in again) and makes it active: the second half of
    /// `login`, shared with `login_wait`.
    func open(
        _ authentication: Authentication,
        at provider: any IdentityProvider,
        isAnonymous: Bool = false,
        placement: Placement = Placement()
    ) async throws -> UserChange {
        // Claims with control characters never reach the store, the log or systemd's status line.
        let authentication = try await self.acceptableClaims(authentication, at: provider)
        try await self.requireExpectedEmail(authentication, at: provider, placement)
        let identity = authentication.identity(at: provider.name)
        return try await self.withIdentityGate(identity) {
            try await self.open(identity, authentication, at: provider, isAnonymous: isAnonymous, placement: placement)
        }
    }

    private func open(
        _ identity: Identity,
        _ authentication: Authentication,
        at provider: any IdentityProvider,
        isAnonymous: Bool,
        placement: Placement
    ) async throws -> UserChange {
        let now = self.clock.now()
        let deadlines = self.configuration.deadlines
        var resolution = try await self.resolveOwner(of: identity)
        var opened: (String, Draft)?
        // An unlink or a deletion may take the identity from its owner between the look-up and the change: then it is
        // looked up again (logins and links of this identity wait at its gate meanwhile).
        for _ in 0..<Self.identityRounds where opened == nil {
            let userID = resolution.userID
            let epoch = resolution.epoch
            let owner = resolution.owner
            let (resultID, draft) = try await self.holdingOff(
                force: placement.force,
                scope: placement.scope,
                to: userID,
                seats: self.seatsChanged(activating: userID, placement)
            ) { admission in
                try await self.mutate { draft -> String? in
                    guard self.identityGates.isCurrent(epoch) else { return nil }
                    if isAnonymous, let existing = self.state.loggedInAnonymous(of: provider.name),
                        existing.id != userID
                    {
                        // Another anonymous login won the race: keep that user and drop the session just opened.
                        draft.revocations.append((provider.name, authentication.session(userID: userID)))
                        try self.admit(activating: existing.id, placement, admission)
                        self.activate(existing, at: now, on: placement.seat, in: &draft)
                        return existing.id
                    }
                    try self.admit(activating: userID, placement, admission)
                    let existing = self.state[userID]
                    if let existing { draft.revocations += self.revocableSessions(of: existing) }
                    var user =
                        existing
                        ?? User(
                            id: userID,
                            provider: provider.name,
                            subject: authentication.subject,
                            kind: authentication.kind,
                            email: nil,
                            name: nil,
                            state: .loggedOut,
                            addedGeneration: self.state.generation + 1,
                            createdAt: now,
                            lastLoginAt: nil,
                            lastActiveAt: nil,
                            activeGeneration: 0,
                            tokens: nil,
                            providerData: nil,
                            // A user removed from the device comes back with every identity it had.
                            otherIdentities: owner?.identities.filter { !$0.isSameAccount(as: identity) } ?? []
                        )
                    let wasLoggedIn = existing?.state == .loggedIn
                    // The session belongs to the identity used last, whichever of the user's it is.
                    user.take(authentication, as: identity, at: now, by: placement.peerUID)
                    draft.saved[userID] = user
                    let seat = placement.seat ?? self.state.defaultSeat
                    if placement.activate, self.state.seats.user(on: seat) != userID {
                        self.activate(user, at: now, on: placement.seat, in: &draft)
                    }
                    if !wasLoggedIn {
                        draft.changesGeneration = true
                        // The user as it is once this change applies: active (a login always makes it so), with a
                        // fresh refresh state and its refresh deadline.
                        let info = UserInfo(
                            draft.saved[userID] ?? user,
                            status: nil,
                            active: placement.activate,
                            deadlines: deadlines
                        )
                        draft.events.append(.userLoggedIn(user: info))
                    }
                    return userID
                }
            }
            if let resultID {
                opened = (resultID, draft)
            } else {
                resolution = try await self.resolveOwner(of: identity)
            }
        }
        guard let (resultID, draft) = opened else {
            _ = await self.revoke([(provider.name, authentication.session(userID: resolution.userID))])
            throw SessionError.identitiesChanging
        }
        _ = await self.revoke(draft.revocations)
        self.logger.debug(
            "login",
            metadata: ["user.id": "\(resultID)", "provider": "\(provider.name)", "kind": "\(authentication.kind)"]
        )
        return try self.result(of: draft, for: resultID)
    }

    /// The answer to a change that concerned `userID`: the user as committed by it.
    func result(of draft: Draft, for userID: String) throws -> UserChange {
        guard let info = draft.infos[userID] ?? self.view.info(userID) else { throw SessionError.userNotFound(userID) }
        let seat = self.seatConfiguration.namesSeats ? draft.seatsAfter.seat(of: userID) : nil
        return UserChange(generation: draft.generation, seat: seat, user: info)
    }

    /// Anonymous login reuses the provider's logged-in anonymous user, if there is one, and makes it active.
    private func activateExistingAnonymous(of provider: String, _ placement: Placement) async throws -> UserChange? {
        let now = self.clock.now()
        guard let known = self.state.loggedInAnonymous(of: provider) else { return nil }
        let (userID, draft) = try await self.holdingOff(
            force: placement.force,
            scope: placement.scope,
            to: known.id,
            seats: self.seatsChanged(activating: known.id, placement)
        ) { admission in
            try await self.mutate { draft -> String? in
                guard let existing = self.state.loggedInAnonymous(of: provider) else { return nil }
                try self.admit(activating: existing.id, placement, admission)
                if self.state.seats.user(on: placement.seat ?? self.state.defaultSeat) != existing.id {
                    self.activate(existing, at: now, on: placement.seat, in: &draft)
                }
                return existing.id
            }
        }
        guard let userID else { return nil }
        return try self.result(of: draft, for: userID)
    }

    func activate(_ user: User, at now: Timestamp, on seat: String?, in draft: inout Draft) {
        var user = draft.saved[user.id] ?? user
        user.lastActiveAt = now
        draft.saved[user.id] = user
        draft.newlyActive = user.id
        draft.newlyActiveSeat = seat
        draft.changesGeneration = true
    }

    /// Makes a logged-in user active on `seat` (nil: the default seat).
    package func switchUser(
        to userID: String,
        ifGeneration: Int64?,
        seat requested: String? = nil,
        move: Bool = false,
        force: Bool = false,
        scope: SeatScope = .everywhere
    ) async throws -> UserChange {
        let now = self.clock.now()
        let placement = Placement(seat: try self.seat(named: requested), move: move, force: force, scope: scope)
        // Refused before waiting for leases: a switch that cannot happen does not hold anyone up.
        try scope.require(self.seatsAbout(activating: userID, placement))
        if let user = self.state[userID], user.state == .loggedIn { try self.checkPlacement(of: userID, placement) }
        let (_, draft) = try await self.holdingOff(
            force: force,
            scope: scope,
            to: userID,
            seats: self.seatsChanged(activating: userID, placement)
        ) { admission in
            try await self.mutate { draft in
                if let ifGeneration, ifGeneration != self.state.generation {
                    throw SessionError.conflict(expected: ifGeneration, actual: self.state.generation)
                }
                try self.admit(activating: userID, placement, admission)
                guard let user = self.state[userID] else { throw SessionError.userNotFound(userID) }
                guard user.state == .loggedIn else { throw SessionError.userLoggedOut(userID) }
                if self.state.seats.user(on: placement.seat ?? self.state.defaultSeat) != userID {
                    self.activate(user, at: now, on: placement.seat, in: &draft)
                }
            }
        }
        self.logger.debug("switch", metadata: ["user.id": "\(userID)"])
        return try self.result(of: draft, for: userID)
    }

    /// Logs a user out: the named one, or the active user of `seat` (nil: the default seat).
    package func logout(
        userID requested: String?,
        seat requestedSeat: String? = nil,
        force: Bool = false,
        scope: SeatScope = .everywhere
    ) async throws -> Logout {
        let seat = try self.seat(named: requestedSeat)
        // The user is the one named, else the seat's active user: resolved again each time the change is admitted.
        // The user is the one named, else the seat's active user as the request found it.
        let targetID = try self.resolve(requested, seat: seat).id
        try scope.require(self.seatsAbout(targetID, namedUser: requested, seat: seat))
        let seatOfTarget = { self.state.seats.seat(of: targetID).map { [$0] } ?? [] }
        let (user, draft) = try await self.holdingOff(force: force, scope: scope, to: nil, seats: seatOfTarget()) {
            admission in
            try await self.mutate { draft -> User in
                let user = try self.resolve(targetID)
                try self.admit(
                    admission,
                    changing: seatOfTarget(),
                    touching: self.seatsAbout(user.id, namedUser: requested, seat: seat)
                )
                if user.state == .loggedIn { self.endSession(of: user, reason: .requested, in: &draft) }
                return user
            }
        }
        let revoked = draft.revocations.isEmpty ? false : await self.revoke(draft.revocations)
        self.logger.debug("logout", metadata: ["user.id": "\(user.id)", "revoked": "\(revoked)"])
        let left = self.seatConfiguration.namesSeats ? draft.seatsBefore.seat(of: user.id) : nil
        if draft.deleted.contains(user.id) {
            var info = UserInfo(user, status: nil, active: false, deadlines: self.configuration.deadlines)
            info.state = .removed
            info.accessTokenExpiresAt = nil
            info.refreshTokenExpiresAt = nil
            info.tokenState = .none
            info.nextRefreshAt = nil
            return Logout(generation: draft.generation, user: info, revoked: revoked, seat: left)
        }
        let result = try self.result(of: draft, for: user.id)
        return Logout(
            generation: result.generation,
            user: result.user,
            revoked: revoked,
            seat: left
        )
    }

    /// Forgets a user. About the whole device, so no seat-scoped permission covers it.
    package func removeUser(_ userID: String, force: Bool = false) async throws -> UserRemoval {
        let seatOfUser = { self.state.seats.seat(of: userID).map { [$0] } ?? [] }
        let (_, draft) = try await self.holdingOff(force: force, scope: .everywhere, to: nil, seats: seatOfUser()) {
            admission in
            try await self.mutate { draft in
                try self.admit(admission, changing: seatOfUser())
                guard let user = self.state[userID] else { throw SessionError.userNotFound(userID) }
                draft.revocations += self.revocableSessions(of: user)
                draft.deleted.insert(userID)
                if user.isAnonymous { draft.forgottenIdentities.insert(userID) }
                draft.changesGeneration = true
                draft.events.append(.userRemoved(userID: userID, reason: .requested))
            }
        }
        _ = await self.revoke(draft.revocations)
        self.logger.debug("remove", metadata: ["user.id": "\(userID)"])
        return UserRemoval(generation: draft.generation, userID: userID)
    }

    /// The seats a request about a user's session is about: without `user_id`, the seat it names (or the caller's);
    /// with one, the seat that user is active on (none when it is active nowhere: no seat-scoped permission covers
    /// it). Shared by `logout`, `access_token` and `refresh`.
    func seatsAbout(_ userID: String, namedUser: String?, seat: String) -> [String] {
        guard namedUser != nil else { return [seat] }
        return self.state.seats.seat(of: userID).map { [$0] } ?? []
    }

    /// Ends a user's session inside a change: an anonymous user is removed, any other user kept logged out.
    func endSession(of user: User, reason: LogoutReason, in draft: inout Draft) {
        draft.revocations += self.revocableSessions(of: user)
        if reason != .requested { draft.leaseBreakReason = reason.rawValue }
        draft.changesGeneration = true
        if user.isAnonymous {
            draft.deleted.insert(user.id)
            // No one can ever log in with an anonymous identity again: the store forgets it.
            draft.forgottenIdentities.insert(user.id)
            draft.events.append(.userRemoved(userID: user.id, reason: .loggedOut))
        } else {
            self.recordEnding(of: user.id, reason: reason, in: &draft)
            var loggedOut = user
            loggedOut.state = .loggedOut
            loggedOut.tokens = nil
            loggedOut.providerData = nil
            draft.saved[user.id] = loggedOut
            draft.events.append(.userLoggedOut(userID: user.id, reason: reason))
        }
    }

    /// Revokes sessions at their providers. Returns whether every revocation was confirmed.
    func revoke(_ revocations: [(provider: String, session: ProviderSession)]) async -> Bool {
        var confirmed = true
        for (providerName, session) in revocations {
            guard let provider = self.providers[providerName] else {
                confirmed = false
                continue
            }
            let revoked = await provider.revoke(session)
            if !revoked {
                self.logger.warning(
                    "provider did not confirm revocation",
                    metadata: ["user.id": "\(session.userID)", "provider": "\(providerName)"]
                )
            }
            confirmed = confirmed && revoked
        }
        return confirmed
    }
}
