import UsherProtocol

/// Linked identities: who owns an identity, `link_credentials` and `unlink_identity`.
extension SessionRegistry {
    /// How many times a login or link looks an identity's owner up again when an unlink or a deletion raced it.
    static let identityRounds = 8

    /// Who a login or link with an identity is about, as the store said at `epoch`.
    struct OwnerResolution: Sendable {
        /// The owner's id, or the id a new user gets.
        var userID: String
        /// The owner, with every identity it has; nil for a new user.
        var owner: IdentityOwner?
        var epoch: UInt64
    }

    /// Runs `body` holding the identity's gate: logins and links of one identity resolve its owner and commit one
    /// after the other, so that one of them never adds a user for an identity another has just given an owner.
    /// Identities gain owners only this way; they lose them by unlinking and deletion, which move the gates' epoch.
    func withIdentityGate<T>(_ identity: Identity, _ body: () async throws -> T) async throws -> T {
        if !self.identityGates.enter(identity) {
            // Suspension: the login or link ahead of this one with the same identity finishes first.
            await withCheckedContinuation { self.identityGates.wait(identity, $0) }
        }
        defer { self.identityGates.leave(identity)?.resume() }
        return try await body()
    }

    /// The user that owns `identity` (on the device or removed from it: the store keeps the identities of removed
    /// users), else the id a new user with this identity gets: derived from the identity, as before identities could
    /// be linked, unless that id is taken (its identity was unlinked from it), then random. Called holding the
    /// identity's gate; the change that uses the answer compares `epoch` (an unlink or deletion meanwhile).
    func resolveOwner(of identity: Identity) async throws -> OwnerResolution {
        let epoch = self.identityGates.epoch
        // Suspensions: the answers may be stale by the time the change runs; the change compares `epoch`.
        if let owner = try await self.store.owner(of: identity) {
            return OwnerResolution(userID: owner.userID, owner: owner, epoch: epoch)
        }
        let derived = User.id(provider: identity.provider, subject: identity.subject)
        if self.state[derived] == nil, try await !self.store.ownsIdentities(derived) {
            return OwnerResolution(userID: derived, owner: nil, epoch: epoch)
        }
        return OwnerResolution(userID: User.randomID(), owner: nil, epoch: epoch)
    }

    /// `link_credentials`: authenticates the credentials and adds their identity to a logged-in user (the named one,
    /// else the seat's active user), whose session then belongs to it; the user becomes the seat's active user, as a
    /// login makes it.
    package func linkCredentials(
        userID requested: String?,
        seat requestedSeat: String? = nil,
        provider name: String?,
        credentials: [String: JSONValue],
        move: Bool = false,
        force: Bool = false,
        scope: SeatScope = .everywhere,
        ownership: Ownership = .everyone
    ) async throws -> UserChange {
        try self.requireRunning()
        let provider = try self.provider(named: name)
        let seat = try self.seat(named: requestedSeat)
        let target = try self.loggedIn(requested, seat: seat)
        // Refused before authenticating, and checked again where the link commits.
        try ownership.require(target, to: "link identities to")
        let placement = Placement(seat: seat, move: move, force: force, scope: scope, peerUID: nil)
        // Refused before authenticating (a slow KDF, a round trip); checked again when it commits.
        try scope.require(self.seatsAbout(activating: target.id, placement))
        guard credentials["type"]?.stringValue != CredentialType.anonymous else {
            throw SessionError.invalidLink("cannot add anonymous credentials to an existing user")
        }
        let authentication = try await provider.authenticate(credentials: credentials)
        return try await self.link(
            authentication,
            at: provider,
            to: target.id,
            placement: placement,
            ownership: ownership
        )
    }

    /// Adds the identity a provider authenticated to `userID` and gives the user the session it opened: the second
    /// half of `link_credentials`, shared with `login_wait` with `link_to`. The session it opened is revoked when the
    /// link is refused; the user's previous session is revoked once the link is durable. The user must be the peer's
    /// (`ownership`) when the link commits, and a link never changes who opened the session (`User.sessionUID`).
    func link(
        _ authentication: Authentication,
        at provider: any IdentityProvider,
        to userID: String,
        placement: Placement,
        ownership: Ownership
    ) async throws -> UserChange {
        let opened = authentication.session(userID: userID)
        do {
            var result = try await self.attach(
                authentication,
                at: provider,
                to: userID,
                placement: placement,
                ownership: ownership
            )
            // A token the daemon signs names the user in `sub`: the one just issued named the identity's own id, as the
            // link was not yet recorded. Issued again now that it is.
            if provider is any KeyPublishing, (try? await self.refreshTokens(of: userID)) != nil,
                let info = self.view.info(userID)
            {
                result.user = info
            }
            return result
        } catch {
            _ = await self.revoke([(provider.name, opened)])
            throw error
        }
    }

    private func attach(
        _ authentication: Authentication,
        at provider: any IdentityProvider,
        to userID: String,
        placement: Placement,
        ownership: Ownership
    ) async throws -> UserChange {
        let authentication = try await self.acceptableClaims(authentication, at: provider)
        guard authentication.kind != CredentialType.anonymous else {
            throw SessionError.invalidLink("cannot add anonymous credentials to an existing user")
        }
        let identity = authentication.identity(at: provider.name)
        return try await self.withIdentityGate(identity) {
            try await self.attach(
                identity,
                authentication,
                at: provider,
                to: userID,
                placement: placement,
                ownership: ownership
            )
        }
    }

    private func attach(
        _ identity: Identity,
        _ authentication: Authentication,
        at provider: any IdentityProvider,
        to userID: String,
        placement: Placement,
        ownership: Ownership
    ) async throws -> UserChange {
        let now = self.clock.now()
        for _ in 0..<Self.identityRounds {
            let resolution = try await self.resolveOwner(of: identity)
            if let owner = resolution.owner, owner.userID != userID { throw SessionError.identityInUse }
            let (linked, draft) = try await self.holdingOff(
                force: placement.force,
                scope: placement.scope,
                to: userID,
                seats: self.seatsChanged(activating: userID, placement)
            ) { admission in
                try await self.mutate { draft -> Bool in
                    guard self.identityGates.isCurrent(resolution.epoch) else { return false }
                    try self.admit(activating: userID, placement, admission)
                    guard var user = self.state[userID] else { throw SessionError.userNotFound(userID) }
                    guard user.state == .loggedIn else { throw SessionError.userLoggedOut(userID) }
                    // State may have changed across the suspensions since the first check: another uid's login.
                    try ownership.require(user, to: "link identities to")
                    draft.revocations += self.revocableSessions(of: user)
                    // The session stays the one its owner opened: linking adds a way in, not a new owner.
                    user.take(authentication, as: identity, at: now, by: user.sessionUID)
                    draft.saved[userID] = user
                    draft.changesGeneration = true
                    if self.state.seats.user(on: placement.seat ?? self.state.defaultSeat) != userID {
                        self.activate(user, at: now, on: placement.seat, in: &draft)
                    }
                    let info = UserInfo(
                        draft.saved[userID] ?? user,
                        status: nil,
                        active: true,
                        deadlines: self.configuration.deadlines
                    )
                    draft.events.append(.userChanged(user: info))
                    return true
                }
            }
            guard linked else { continue }
            _ = await self.revoke(draft.revocations)
            self.logger.debug(
                "link",
                metadata: ["user.id": "\(userID)", "provider": "\(provider.name)", "kind": "\(identity.kind)"]
            )
            return try self.result(of: draft, for: userID)
        }
        throw SessionError.identitiesChanging
    }

    /// `unlink_identity`: removes one identity from a user. The last one cannot go; unlinking the session's own ends
    /// the session (a user left with anonymous identities only is removed, as an anonymous logout removes it).
    package func unlinkIdentity(
        userID: String,
        provider: String,
        subject: String,
        ownership: Ownership = .everyone,
        force: Bool = false
    ) async throws -> IdentityUnlinking {
        let seatOfUser = { self.state.seats.seat(of: userID).map { [$0] } ?? [] }
        let (user, draft) = try await self.holdingOff(force: force, scope: .everywhere, to: nil, seats: seatOfUser()) {
            admission in
            try await self.mutate { draft -> User in
                try self.admit(admission, changing: seatOfUser())
                guard var user = self.state[userID] else { throw SessionError.userNotFound(userID) }
                try ownership.require(user, to: "unlink identities from")
                let unlinked = Identity(provider: provider, kind: "", subject: subject)
                guard user.has(unlinked) else {
                    throw SessionError.invalidLink(
                        "user \(userID) has no identity \(subject.prefix(200)) at \(provider)"
                    )
                }
                guard user.otherIdentities.count >= 1 else {
                    throw SessionError.invalidLink("the last identity of a user cannot be unlinked")
                }
                draft.changesGeneration = true
                guard user.sessionIdentity.isSameAccount(as: unlinked) else {
                    user.otherIdentities.removeAll { $0.isSameAccount(as: unlinked) }
                    draft.saved[userID] = user
                    draft.events.append(.userChanged(user: self.pendingInfo(user)))
                    return user
                }
                // The session belongs to the identity that goes: it ends, and the next identity takes its place.
                let before = user
                user.sessionIdentity = user.otherIdentities.removeFirst()
                user.state = .loggedOut
                user.tokens = nil
                user.providerData = nil
                if before.state == .loggedIn { draft.revocations += self.revocableSessions(of: before) }
                if user.isAnonymous {
                    // Nothing is left to log in with (an anonymous identity is never reused): removed, as an anonymous
                    // user whose session ends is.
                    draft.deleted.insert(userID)
                    draft.forgottenIdentities.insert(userID)
                    draft.events.append(.userRemoved(userID: userID, reason: .loggedOut))
                    return user
                }
                draft.saved[userID] = user
                if before.state == .loggedIn {
                    draft.events.append(.userLoggedOut(userID: userID, reason: .identityUnlinked))
                }
                draft.events.append(.userChanged(user: self.pendingInfo(user)))
                return user
            }
        }
        let revoked = draft.revocations.isEmpty ? true : await self.revoke(draft.revocations)
        self.logger.debug("unlink", metadata: ["user.id": "\(userID)", "provider": "\(provider)"])
        let info = draft.infos[userID] ?? self.pendingInfo(user)
        return IdentityUnlinking(
            generation: draft.generation,
            user: draft.deleted.contains(userID) ? nil : info,
            removed: draft.deleted.contains(userID),
            revoked: revoked
        )
    }

    /// A user as clients will see it once the change that saves it applies (for the events of that change).
    func pendingInfo(_ user: User) -> UserInfo {
        UserInfo(
            user,
            status: nil,
            active: self.state.seats.seat(of: user.id) != nil,
            deadlines: self.configuration.deadlines
        )
    }
}
