import Logging
import UsherCore
import UsherHTTP
import UsherProtocol
import UsherStore

/// Settings of one `type = "local"` provider section.
package struct LocalProviderConfiguration: Sendable, Hashable {
    package var accessTokenLifetimeMilliseconds: Int64
    package var refreshTokenLifetimeMilliseconds: Int64
    package var allowAnonymous: Bool
    package var allowRegistration: Bool
    /// The `iss` claim of access tokens.
    package var issuer: String
    /// `dpop`: bind access tokens to a key the daemon makes for each session (`cnf.jkt`, RFC 9449).
    package var dpop = false
    /// `[providers.NAME.jwt]`: accept JWTs from this issuer (`jwt` credentials).
    package var jwt: OutsideTokenConfiguration?
    /// `[providers.NAME.id_token.ISSUER]`: accept ID tokens from these issuers, by name (`id_token` credentials).
    package var idTokenIssuers: [String: OutsideTokenConfiguration] = [:]
    /// `[providers.NAME.function]`: let this command decide (`function` credentials).
    package var function: FunctionHookConfiguration?
    /// `[providers.NAME.registration]`: confirmation of new accounts and self-service password resets.
    package var registration = AccountRegistrationConfiguration()
    /// `[providers.NAME.access_token.ISSUER]`: accept these issuers' access tokens, by name (`access_token`
    /// credentials).
    package var accessTokenIssuers: [String: AccessTokenIssuerConfiguration] = [:]

    package init(
        accessTokenLifetimeMilliseconds: Int64 = 30 * 60_000,
        refreshTokenLifetimeMilliseconds: Int64 = 60 * 86_400_000,
        allowAnonymous: Bool = true,
        allowRegistration: Bool = true,
        issuer: String
    ) {
        self.accessTokenLifetimeMilliseconds = accessTokenLifetimeMilliseconds
        self.refreshTokenLifetimeMilliseconds = refreshTokenLifetimeMilliseconds
        self.allowAnonymous = allowAnonymous
        self.allowRegistration = allowRegistration
        self.issuer = issuer
    }
}

/// The embedded identity provider: email/password accounts, anonymous users and API keys, with access tokens that
/// the daemon signs itself (ES256 JWTs; `jwks` publishes the key) and rotating refresh tokens. It also accepts
/// credentials proven elsewhere (a JWT, an ID token, the verdict of a command: see `OutsideCredentials.swift`) and
/// then issues its own tokens for them just the same.
///
/// It keeps only hashes of what it issues: scrypt for passwords, SHA-256 for refresh tokens and API keys (both are
/// 256-bit random values, so a fast hash is enough). `refresh_token_lifetime` is an absolute session lifetime
/// counted from login: rotation never extends it.
package struct LocalProvider: IdentityProvider, AccountRegistering, APIKeyManaging, KeyPublishing, AccountDeleting {
    package let name: String
    package let type = "local"
    package let configuration: LocalProviderConfiguration
    let database: AppDatabase
    let signer: TokenSigner
    let hasher: PasswordHasher
    let clock: any SessionClock
    /// Verifiers and the function for outside credentials.
    let outside: OutsideCredentials
    /// `confirm_hook` and `reset_hook`: who delivers confirmation and reset tokens (`LocalProvider+Recovery.swift`).
    let confirmHook: DeliveryHook?
    let resetHook: DeliveryHook?
    let logger: Logger

    package static let minimumPasswordLength = 6
    package static let maximumPasswordLength = 128

    package init(
        name: String,
        configuration: LocalProviderConfiguration,
        database: AppDatabase,
        signer: TokenSigner,
        hasher: PasswordHasher,
        clock: any SessionClock,
        httpClient: HTTPTransport = .shared,
        logger: Logger = Logger(label: "usher.local", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.name = name
        self.configuration = configuration
        self.database = database
        self.signer = signer
        self.hasher = hasher
        self.clock = clock
        self.logger = logger
        self.outside = OutsideCredentials(
            providerName: name,
            configuration: configuration,
            httpClient: httpClient,
            clock: clock,
            logger: logger
        )
        self.confirmHook = configuration.registration.confirmHook.map {
            DeliveryHook(providerName: name, purpose: "confirm", configuration: $0, logger: logger)
        }
        self.resetHook = configuration.registration.resetHook.map {
            DeliveryHook(providerName: name, purpose: "reset", configuration: $0, logger: logger)
        }
    }

    package var credentialTypes: [String] {
        var types = [CredentialType.emailPassword]
        if self.configuration.allowAnonymous { types.append(CredentialType.anonymous) }
        types.append(CredentialType.apiKey)
        return types + self.outside.credentialTypes
    }

    package var publicKeys: [JWK] { [self.signer.publicJWK] }

    // MARK: Accounts

    package func register(email: String, password: String) async throws -> String {
        guard self.configuration.allowRegistration else { throw ProviderError.registrationDisabled }
        let email = try Self.validatedEmail(email)
        try Self.validatePassword(password, parameter: "password")
        let account = LocalAccount(
            id: SecureRandom.hex(SecureRandom.bytes(count: 16)),
            email: email,
            passwordHash: try await self.hasher.hash(password),
            createdAt: self.clock.now()
        )
        if self.confirmsAccounts { return try await self.registerUnconfirmed(account) }
        guard try await self.database.createLocalAccount(provider: self.name, account: account) else {
            throw ProviderError.accountExists
        }
        return email
    }

    package func changePassword(email: String, oldPassword: String, newPassword: String) async throws -> String {
        guard let account = try await self.database.localAccount(provider: self.name, email: email) else {
            // Spend the same time as a wrong password, so a probe cannot tell which emails have accounts.
            _ = try? await self.hasher.hash(oldPassword)
            throw ProviderError.invalidCredentials("wrong email or password")
        }
        guard await self.hasher.verify(oldPassword, against: account.passwordHash) else {
            throw ProviderError.invalidCredentials("wrong email or password")
        }
        try Self.validatePassword(newPassword, parameter: "new_password")
        let hash = try await self.hasher.hash(newPassword)
        guard try await self.database.setLocalPassword(provider: self.name, id: account.id, passwordHash: hash) else {
            // Deleted between the check and the write.
            throw ProviderError.invalidCredentials("wrong email or password")
        }
        return account.email
    }

    static func validatedEmail(_ email: String) throws(ProviderError) -> String {
        let trimmed = email.trimmingWhitespace()
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard trimmed.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
            !trimmed.contains(where: { $0.isWhitespace || $0.isNewline }), !trimmed.containsControlCharacters
        else { throw .invalidParams(parameter: "email", "params.email is not a valid email address") }
        // Stored and shown composed (NFC), so that canonically equivalent spellings show as the same bytes.
        return EmailAddress.composed(trimmed)
    }

    /// - Parameter parameter: the request's parameter that carried it (`password`, `new_password`).
    static func validatePassword(_ password: String, parameter: String) throws(ProviderError) {
        guard (Self.minimumPasswordLength...Self.maximumPasswordLength).contains(password.count) else {
            throw .invalidParams(
                parameter: parameter,
                "the password must be \(Self.minimumPasswordLength) to \(Self.maximumPasswordLength) characters long"
            )
        }
    }

    // MARK: IdentityProvider

    package func authenticate(credentials: [String: JSONValue]) async throws -> Authentication {
        let type = credentials["type"]?.stringValue ?? ""
        switch type {
        case CredentialType.emailPassword:
            guard let email = credentials["email"]?.stringValue, let password = credentials["password"]?.stringValue
            else {
                throw ProviderError.invalidParams(
                    parameter: "credentials",
                    "email_password credentials need string email and password"
                )
            }
            guard let account = try await self.database.localAccount(provider: self.name, email: email) else {
                // Spend the same time as a wrong password, so a probe cannot tell which emails have accounts.
                _ = try? await self.hasher.hash(password)
                throw ProviderError.invalidCredentials("wrong email or password")
            }
            guard await self.hasher.verify(password, against: account.passwordHash) else {
                throw ProviderError.invalidCredentials("wrong email or password")
            }
            // Only after the password proved right: an unconfirmed account is never revealed to anyone else.
            guard account.confirmed else { throw ProviderError.accountUnconfirmed }
            return try await self.openSession(
                subject: account.id,
                kind: type,
                email: account.email,
                profile: try await self.accountProfile(account)
            )
        case CredentialType.anonymous:
            guard self.configuration.allowAnonymous else {
                throw ProviderError.unsupportedCredentials("anonymous login is turned off for provider \(self.name)")
            }
            let subject = "anonymous:" + SecureRandom.hex(SecureRandom.bytes(count: 16))
            return try await self.openSession(subject: subject, kind: type, email: nil)
        case CredentialType.apiKey:
            guard let key = credentials["key"]?.stringValue else {
                throw ProviderError.invalidParams(parameter: "credentials", "api_key credentials need a string key")
            }
            guard
                let subject = try await self.database.apiKeySubject(
                    provider: self.name,
                    keyHash: SecureRandom.sha256(key)
                ),
                let account = try await self.database.localAccount(provider: self.name, id: subject)
            else { throw ProviderError.invalidCredentials("unknown or deleted API key") }
            return try await self.openSession(
                subject: subject,
                kind: type,
                email: account.email,
                profile: try await self.accountProfile(account)
            )
        case CredentialType.jwt:
            return try await self.authenticateJWT(credentials)
        case CredentialType.idToken:
            return try await self.authenticateIDToken(credentials)
        case CredentialType.function:
            return try await self.authenticateFunction(credentials)
        case CredentialType.accessToken:
            return try await self.authenticateAccessToken(credentials)
        default:
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) does not accept credentials of type \"\(type)\""
            )
        }
    }

    func openSession(
        subject: String,
        kind: String,
        email: String?,
        name: String? = nil,
        profile: UserClaims? = nil,
        customData: UserClaims? = nil
    ) async throws -> Authentication {
        let now = self.clock.now()
        let grant = LocalRefreshGrant(
            subject: subject,
            kind: kind,
            email: email,
            sessionStartedAt: now,
            expiresAt: now.adding(milliseconds: self.configuration.refreshTokenLifetimeMilliseconds)
        )
        let refreshToken = SecureRandom.token(byteCount: 32)
        try await self.database.storeRefreshGrant(
            provider: self.name,
            tokenHash: SecureRandom.sha256(refreshToken),
            grant: grant
        )
        let key = self.configuration.dpop ? DPoPKey.generate() : nil
        let tokens = try await self.issueTokens(grant: grant, refreshToken: refreshToken, key: key, now: now)
        return Authentication(
            subject: subject,
            kind: kind,
            email: email,
            name: name ?? profile?["name"]?.stringValue,
            tokens: tokens,
            profile: profile,
            customData: customData
        )
    }

    /// Signs the access token of `grant` for `userID` (nil: the owner of the grant's identity, looked up: a login,
    /// where the user is not known yet), bound to `key` when there is one.
    private func issueTokens(
        grant: LocalRefreshGrant,
        refreshToken: String,
        key: DPoPKey?,
        now: Timestamp,
        for userID: String? = nil
    ) async throws -> TokenSet {
        // An access token never outlives the session it belongs to.
        let expiresAt = min(
            now.adding(milliseconds: self.configuration.accessTokenLifetimeMilliseconds),
            grant.expiresAt
        )
        let owner: String
        if let userID { owner = userID } else { owner = try await self.userID(of: grant.subject) }
        var claims: [String: JSONValue] = [
            "iss": .string(self.configuration.issuer),
            "sub": .string(owner),
            "iat": .int(now.secondsSinceEpoch),
            "exp": .int(expiresAt.secondsSinceEpoch),
            "jti": .string(SecureRandom.token(byteCount: 16)),
        ]
        if let email = grant.email { claims["email"] = .string(email) }
        if let key { claims["cnf"] = .object(["jkt": .string(key.thumbprint)]) }
        return TokenSet(
            accessToken: try await self.signer.sign(claims: claims),
            issuedAt: now,
            expiresAt: expiresAt,
            refreshToken: refreshToken,
            refreshExpiresAt: grant.expiresAt,
            dpopKey: key
        )
    }

    /// Checks (read-only) that the refresh token's grant exists and is unexpired, and issues new tokens. The rotation
    /// itself (consume the old grant, store the new one) is the returned `pendingWrite`: the registry commits it in
    /// the same transaction as the new tokens, so a crash in between can never leave a consumed grant behind.
    package func refresh(_ session: ProviderSession) async throws -> RefreshedSession {
        guard let oldToken = session.tokens.refreshToken else {
            throw ProviderError.sessionRevoked("the session has no refresh token")
        }
        let now = self.clock.now()
        let oldHash = SecureRandom.sha256(oldToken)
        let grant: LocalRefreshGrant?
        do {
            grant = try await self.database.refreshGrant(provider: self.name, tokenHash: oldHash, now: now)
        } catch {
            throw ProviderError.unavailable("the local account database is unavailable")
        }
        guard let grant else { throw ProviderError.sessionRevoked("the refresh token is revoked or expired") }
        let newToken = SecureRandom.token(byteCount: 32)
        // The session keeps its key; one from before `dpop` was turned on is bound from now on, and one from after it
        // was turned off gets bearer tokens.
        let key = self.configuration.dpop ? session.tokens.dpopKey ?? DPoPKey.generate() : nil
        return RefreshedSession(
            // The registry names the session's user: no look-up on the refresh path.
            tokens: try await self.issueTokens(
                grant: grant,
                refreshToken: newToken,
                key: key,
                now: now,
                for: session.userID
            ),
            providerData: nil,
            pendingWrite: LocalGrantRotation(
                provider: self.name,
                oldHash: oldHash,
                newHash: SecureRandom.sha256(newToken),
                now: now
            )
        )
    }

    /// The user id tokens name in `sub`: the one of the user the identity is linked to, else derived from it as for
    /// every identity before linking.
    private func userID(of subject: String) async throws -> String {
        let identity = Identity(provider: self.name, kind: "", subject: subject)
        let owner: IdentityOwner?
        do {
            owner = try await self.database.owner(of: identity)
        } catch {
            throw ProviderError.unavailable("the local account database is unavailable")
        }
        return owner?.userID ?? User.id(provider: self.name, subject: subject)
    }

    // MARK: AccountDeleting

    package func deletionProblem(_ identity: Identity, hasSession: Bool) -> String? { nil }

    /// Nothing is deleted here: the account rows go in the transaction that removes the user.
    package func deleteAccount(_ identity: Identity, session: ProviderSession?) async throws -> (any PendingWrite)? {
        LocalAccountDeletion(provider: self.name, subject: identity.subject)
    }

    package func revoke(_ session: ProviderSession) async -> Bool {
        guard let token = session.tokens.refreshToken else { return true }
        do {
            // A grant that is already gone (expired and purged, or revoked before) is revoked all the same.
            _ = try await self.database.revokeRefreshGrant(provider: self.name, tokenHash: SecureRandom.sha256(token))
            return true
        } catch {
            return false
        }
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
