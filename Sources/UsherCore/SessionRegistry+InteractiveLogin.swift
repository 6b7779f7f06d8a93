extension SessionRegistry {
    /// `login_begin`: starts an interactive login of `type` (`authorization_code`, `device_code`) at a provider that
    /// supports them.
    package func loginBegin(
        provider name: String?,
        type: String,
        redirectURI: String?
    ) async throws -> StartedLogin {
        let provider = try self.provider(named: name)
        guard let interactive = provider as? any InteractiveLoginProviding else {
            throw ProviderError.unsupportedCredentials("provider \(provider.name) has no interactive logins")
        }
        return try await interactive.beginLogin(type: type, redirectURI: redirectURI)
    }

    /// `login_wait`: waits for a started login to complete, then logs its user in as `login` does.
    ///
    /// A login id is `PROVIDER.RANDOM`; the provider keeps the login until it completes or expires.
    package func loginWait(
        loginID: String,
        seat requested: String? = nil,
        move: Bool = false,
        force: Bool = false,
        scope: SeatScope = .everywhere,
        linkTo: String? = nil,
        peerUID: UInt32? = nil
    ) async throws -> UserChange {
        let placement = Placement(
            seat: try self.seat(named: requested),
            move: move,
            force: force,
            scope: scope,
            peerUID: peerUID
        )
        try scope.require([placement.seat ?? self.state.defaultSeat])
        if let linkTo {
            let target = try self.loggedIn(linkTo)
            try scope.require(self.seatsAbout(activating: target.id, placement))
        }
        guard let dot = loginID.firstIndex(of: "."),
            let provider = try? self.provider(named: String(loginID[..<dot])) as? any InteractiveLoginProviding,
            provider.hasLogin(loginID)
        else {
            throw ProviderError.expiredToken("no login \"\(loginID.prefix(80))\" is under way (it may have expired)")
        }
        // Suspension: the login may take minutes; state may change meanwhile, and `open` re-reads it.
        let authentication = try await provider.finishLogin(loginID)
        if let linkTo {
            guard authentication.kind != CredentialType.anonymous else {
                throw SessionError.invalidLink("cannot add anonymous credentials to an existing user")
            }
            return try await self.link(authentication, at: provider, to: linkTo, placement: placement)
        }
        return try await self.open(authentication, at: provider, placement: placement)
    }
}
