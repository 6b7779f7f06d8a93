import UsherProtocol

extension SessionRegistry {
    /// `login_begin`: starts an interactive login of `type` (`authorization_code`, `device_code`) at a provider that
    /// supports them.
    /// The login is the peer uid `owner`'s: only it, root and usherd's uid may wait for it (`Ownership`).
    package func loginBegin(
        provider name: String?,
        type: LoginFlow,
        redirectURI: String?,
        owner: UInt32
    ) async throws -> StartedLogin {
        let provider = try self.provider(named: name)
        guard let interactive = provider as? any InteractiveLoginProviding else {
            throw ProviderError.unsupportedCredentials("provider \(provider.name) has no interactive logins")
        }
        return try await interactive.beginLogin(type: type, redirectURI: redirectURI, owner: owner)
    }

    /// `login_wait`: waits for a started login to complete, then logs its user in as `login` does (with `linkTo`, links
    /// its identity to that user as `link_credentials` does). The login must be the peer's, and so must `linkTo`.
    ///
    /// A login id is `PROVIDER.RANDOM`; the provider keeps the login until it completes or expires.
    package func loginWait(
        loginID: String,
        seat requested: String? = nil,
        move: Bool = false,
        force: Bool = false,
        scope: SeatScope = .everywhere,
        linkTo: String? = nil,
        peerUID: UInt32? = nil,
        ownership: Ownership = .everyone,
        activate: Bool = true,
        expectEmail: String? = nil
    ) async throws -> UserChange {
        let placement = Placement(
            seat: try self.seat(named: requested),
            move: move,
            force: force,
            scope: scope,
            peerUID: peerUID,
            activate: activate,
            expectEmail: expectEmail
        )
        try scope.require([placement.seat ?? self.state.defaultSeat])
        if let linkTo {
            let target = try self.loggedIn(linkTo)
            try ownership.require(target, to: "link identities to")
            try scope.require(self.seatsAbout(activating: target.id, placement))
        }
        guard let dot = loginID.firstIndex(of: "."),
            let provider = try? self.provider(named: String(loginID[..<dot])) as? any InteractiveLoginProviding,
            let owner = provider.owner(ofLogin: loginID)
        else {
            throw ProviderError.expiredToken("no login \"\(loginID.prefix(80))\" is under way (it may have expired)")
        }
        guard ownership.owns(owner) else { throw SessionError.loginNotYours }
        // Suspension: the login may take minutes; state may change meanwhile, and `open` re-reads it.
        let authentication = try await provider.finishLogin(loginID)
        if let linkTo {
            guard authentication.kind != CredentialType.anonymous else {
                throw SessionError.invalidLink("cannot add anonymous credentials to an existing user")
            }
            return try await self.link(
                authentication,
                at: provider,
                to: linkTo,
                placement: placement,
                ownership: ownership
            )
        }
        return try await self.open(authentication, at: provider, placement: placement)
    }
}
