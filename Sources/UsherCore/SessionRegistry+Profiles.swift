import UsherProtocol

/// Profiles: `refresh_profile` (the SDK's `refreshCustomData()`) and `update_profile` (a local account's own).
extension SessionRegistry {
    /// Refreshes the user's tokens, has its provider read its claims again (OpenID Connect: userinfo; local: the
    /// account's stored profile), and stores the new profile and custom data; `user_changed` when anything changed.
    /// The user is the one named, else the active user of `seat`.
    package func refreshProfile(
        userID requested: String?,
        seat requestedSeat: String? = nil,
        scope: SeatScope = .everywhere
    ) async throws -> UserChange {
        try self.requireRunning()
        let seat = try self.seat(named: requestedSeat)
        let user = try self.loggedIn(requested, seat: seat)
        try scope.require(self.seatsAbout(user.id, namedUser: requested, seat: seat))
        if user.tokens?.hasRefreshToken == true {
            // Suspension: the refresh may take a round trip; the user is read again below.
            _ = try await self.refreshTokens(of: user.id)
        }
        guard let current = self.state[user.id], current.state == .loggedIn, let session = current.session else {
            throw SessionError.userLoggedOut(user.id)
        }
        var claims: (profile: UserClaims?, customData: UserClaims?) = (nil, nil)
        if let reading = self.providers[current.provider] as? any ProfileReading {
            // Suspension: userinfo is a round trip.
            claims = try await reading.readProfile(session)
        }
        return try await self.storeProfile(of: user.id, profile: claims.profile, customData: claims.customData)
    }

    /// Sets claims of a local account's profile (`name`, `picture`, `locale`; a null or empty value removes one),
    /// kept with the account for later logins and given to the device's user at once. The user is the one named, else
    /// the active user of `seat`; it must be logged in.
    package func updateProfile(
        userID requested: String?,
        seat requestedSeat: String? = nil,
        changes: [String: JSONValue],
        scope: SeatScope = .everywhere
    ) async throws -> UserChange {
        try self.requireRunning()
        let seat = try self.seat(named: requestedSeat)
        let user = try self.loggedIn(requested, seat: seat)
        try scope.require(self.seatsAbout(user.id, namedUser: requested, seat: seat))
        guard let editing = self.providers[user.provider] as? any ProfileEditing else {
            throw ProviderError.unsupportedCredentials(
                "provider \(user.provider) keeps no profile to update: its users' profiles come from the provider "
                    + "(refresh_profile reads them again)"
            )
        }
        // Suspension: a write to the account database.
        let (profile, write) = try await editing.updateProfile(subject: user.subject, changes: changes)
        return try await self.storeProfile(
            of: user.id,
            profile: profile,
            customData: nil,
            replacingName: true,
            accountWrite: write
        )
    }

    /// Stores new claims for a logged-in user in one change, announcing `user_changed` when they differ from what it
    /// has. `replacingName`: the user's `name` becomes the profile's even when it has none (update_profile).
    /// `accountWrite`: the provider's own record of the profile, committed in the same transaction.
    private func storeProfile(
        of userID: String,
        profile: UserClaims?,
        customData: UserClaims?,
        replacingName: Bool = false,
        accountWrite: (any PendingWrite)? = nil
    ) async throws -> UserChange {
        let deadlines = self.configuration.deadlines
        let (_, draft) = try await self.mutate { draft in
            // State may have changed across the awaits before this change: read it again.
            guard let user = self.state[userID] else { throw SessionError.userNotFound(userID) }
            guard user.state == .loggedIn else { throw SessionError.userLoggedOut(userID) }
            if let accountWrite { draft.pendingWrites.append(accountWrite) }
            var changed = user
            if let profile, profile != user.profile {
                // The name shown follows the profile, as at login (`name`, else `preferred_username`); a local account
                // whose owner removed its name has none.
                let shown = profile["name"]?.stringValue ?? profile["preferred_username"]?.stringValue
                changed.name = replacingName ? shown : (shown ?? user.name)
                changed.profile = profile
                // The email follows a verified one, by the rule a login follows (`EmailAddress.verified`), so that the
                // user is listed under the address a fresh login would give it.
                if let email = EmailAddress.verified(email: profile["email"], emailVerified: profile["email_verified"])
                {
                    changed.email = email
                }
            }
            if let customData { changed.customData = customData }
            guard changed != user else { return }
            draft.saved[userID] = changed
            draft.changesGeneration = true
            let active = self.state.seats.seat(of: userID) != nil
            draft.events.append(
                .userChanged(user: UserInfo(changed, status: nil, active: active, deadlines: deadlines))
            )
        }
        return try self.result(of: draft, for: userID)
    }
}
