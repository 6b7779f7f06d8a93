import UsherProtocol

/// `delete_user`: the account deleted at its providers, then the user removed from the device.
extension SessionRegistry {
    /// Deletes the user's accounts at the providers of its identities, then removes it from the device, as one
    /// durable change (only by a peer that owns the user: `Ownership`): the local provider's rows (accounts, password hashes, API keys, refresh grants) go in the same
    /// transaction as the user and its identities. An identity at a provider that cannot delete it refuses the whole
    /// request (`not_supported`) before anything is deleted. The successor rule applies as for `remove_user`.
    package func deleteUser(
        _ userID: String,
        ownership: Ownership,
        force: Bool = false
    ) async throws -> UserRemoval {
        try self.requireRunning()
        var user = try self.loggedIn(userID)
        try ownership.require(user, to: "delete")
        // Every identity is checked before any is deleted.
        var deleting: [(identity: Identity, provider: any AccountDeleting)] = []
        for identity in user.identities {
            guard let provider = self.providers[identity.provider] as? any AccountDeleting else {
                throw SessionError.notSupported(
                    "provider \(identity.provider) cannot delete accounts: remove_user forgets the user on this device"
                )
            }
            let hasSession = identity.isSameAccount(as: user.sessionIdentity)
            if let problem = provider.deletionProblem(identity, hasSession: hasSession) {
                throw SessionError.notSupported(problem)
            }
            deleting.append((identity, provider))
        }
        // Refused before deleting anything: a block lease that holds the user's seat.
        if !force, let seat = self.state.seats.seat(of: userID) { try self.refuseIfBlocked([seat]) }
        // A provider that deletes with the session's access token gets one that is valid.
        if let tokens = user.tokens,
            tokens.expiresAt.millisecondsSinceEpoch - self.clock.now().millisecondsSinceEpoch
                < Self.deletionTokenMarginMilliseconds, tokens.hasRefreshToken
        {
            _ = try await self.refreshTokens(of: userID)
            user = try self.loggedIn(userID)
        }
        let identities = user.identities
        var writes: [any PendingWrite] = []
        for (identity, provider) in deleting {
            let session = identity.isSameAccount(as: user.sessionIdentity) ? user.session : nil
            // Suspension: a provider may call its account-deletion endpoint. Deleted remotely, the account is gone
            // even if the device's change below fails: the session then ends at its next refresh.
            if let write = try await provider.deleteAccount(identity, session: session) { writes.append(write) }
        }
        let seatOfUser = { self.state.seats.seat(of: userID).map { [$0] } ?? [] }
        let (_, draft) = try await self.holdingOff(force: force, scope: .everywhere, to: nil, seats: seatOfUser()) {
            admission in
            try await self.mutate { draft in
                try self.admit(admission, changing: seatOfUser())
                draft.pendingWrites += writes
                draft.forgottenIdentities.insert(userID)
                draft.changesGeneration = true
                guard self.state[userID] != nil else { return }
                draft.deleted.insert(userID)
                draft.events.append(.userRemoved(userID: userID, reason: .deleted))
            }
        }
        self.logger.info("user deleted", metadata: ["user.id": "\(userID)", "identities": "\(identities.count)"])
        return UserRemoval(generation: draft.generation, userID: userID, deleted: identities)
    }

    /// A provider that deletes with the session's access token gets one valid for at least this long.
    static let deletionTokenMarginMilliseconds: Int64 = 30_000
}
