import Crypto
import NIOPosix
import Testing
import UsherCore
import UsherProtocol
import UsherProviders
import UsherStore

/// The embedded provider, against the in-memory database.
@Suite("Local provider")
struct LocalProviderTests {
    private struct Fixture {
        var provider: LocalProvider
        var database: AppDatabase
        var clock: ManualClock
        var signer: TokenSigner

        /// Refreshes as the registry does: the provider's answer, then its pending write (the grant rotation)
        /// committed.
        func refresh(_ session: ProviderSession) async throws -> RefreshedSession {
            let refreshed = try await self.provider.refresh(session)
            try await self.database.commit(
                SessionChange(
                    generation: nil,
                    saved: [],
                    deleted: [],
                    pendingWrites: refreshed.pendingWrite.map { [$0] } ?? []
                )
            )
            return refreshed
        }
    }

    /// A local provider with a cheap scrypt cost, on a one-thread pool that `body` may use.
    private static func withProvider<T>(
        allowAnonymous: Bool = true,
        allowRegistration: Bool = true,
        accessLifetimeMilliseconds: Int64 = 30 * 60_000,
        refreshLifetimeMilliseconds: Int64 = 60 * 86_400_000,
        _ body: (Fixture) async throws -> T
    ) async throws -> T {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let clock = ManualClock()
        let database = try AppDatabase.inMemory()
        let signer = TokenSigner(privateKey: P256.Signing.PrivateKey())
        let provider = LocalProvider(
            name: "local",
            configuration: LocalProviderConfiguration(
                accessTokenLifetimeMilliseconds: accessLifetimeMilliseconds,
                refreshTokenLifetimeMilliseconds: refreshLifetimeMilliseconds,
                allowAnonymous: allowAnonymous,
                allowRegistration: allowRegistration,
                issuer: "usher-test"
            ),
            database: database,
            signer: signer,
            hasher: PasswordHasher(
                threadPool: pool,
                parameters: PasswordHasher.Parameters(logN: 10, blockSize: 8, parallelism: 1)
            ),
            clock: clock
        )
        do {
            let result = try await body(
                Fixture(provider: provider, database: database, clock: clock, signer: signer)
            )
            try await pool.shutdownGracefully()
            return result
        } catch {
            try await pool.shutdownGracefully()
            throw error
        }
    }

    private static func emailPassword(_ email: String, _ password: String) -> [String: JSONValue] {
        ["type": "email_password", "email": .string(email), "password": .string(password)]
    }

    private static func session(_ authentication: Authentication) -> ProviderSession {
        ProviderSession(
            userID: User.id(provider: "local", subject: authentication.subject),
            subject: authentication.subject,
            tokens: authentication.tokens,
            providerData: nil
        )
    }

    private static func session(_ subject: String, _ tokens: TokenSet) -> ProviderSession {
        ProviderSession(
            userID: User.id(provider: "local", subject: subject),
            subject: subject,
            tokens: tokens,
            providerData: nil
        )
    }

    @Test("registration: emails are case-insensitive and unique", .timeLimit(.minutes(1)))
    func register() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            #expect(
                try await provider.register(email: " Alice@Example.com ", password: "secret1") == "Alice@Example.com"
            )
            await #expect(throws: ProviderError.accountExists) {
                try await provider.register(email: "alice@example.COM", password: "another1")
            }
            await #expect(throws: ProviderError.invalidParams("params.email is not a valid email address")) {
                try await provider.register(email: "not-an-email", password: "secret1")
            }
            let login = try await provider.authenticate(credentials: Self.emailPassword("ALICE@example.com", "secret1"))
            #expect(login.email == "Alice@Example.com")
            #expect(login.kind == CredentialType.emailPassword)
        }
    }

    @Test("registration: passwords of 6 to 128 characters", .timeLimit(.minutes(1)))
    func passwordLength() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            for length in [0, 5, 129, 1000] {
                await #expect(throws: ProviderError.self, "a password of \(length) characters") {
                    try await provider.register(
                        email: "short\(length)@example.com",
                        password: String(repeating: "x", count: length)
                    )
                }
            }
            for length in [6, 128] {
                let email = "ok\(length)@example.com"
                let password = String(repeating: "y", count: length)
                _ = try await provider.register(email: email, password: password)
                let login = try await provider.authenticate(credentials: Self.emailPassword(email, password))
                #expect(login.email == email)
            }
        }
    }

    @Test("registration can be turned off", .timeLimit(.minutes(1)))
    func registrationDisabled() async throws {
        try await Self.withProvider(allowRegistration: false) { fixture in
            let provider = fixture.provider
            let database = fixture.database
            await #expect(throws: ProviderError.registrationDisabled) {
                try await provider.register(email: "a@example.com", password: "secret1")
            }
            let account = try await database.localAccount(provider: "local", email: "a@example.com")
            #expect(account == nil)
        }
    }

    @Test("email and password login, right and wrong", .timeLimit(.minutes(1)))
    func emailPasswordLogin() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let database = fixture.database
            let clock = fixture.clock
            _ = try await provider.register(email: "a@example.com", password: "secret1")
            let account = try #require(try await database.localAccount(provider: "local", email: "a@example.com"))

            let login = try await provider.authenticate(credentials: Self.emailPassword("a@example.com", "secret1"))
            #expect(login.subject == account.id)
            #expect(login.tokens.issuedAt == clock.now())
            #expect(login.tokens.expiresAt == clock.now().adding(milliseconds: 30 * 60_000))
            #expect(login.tokens.refreshToken != nil)
            #expect(login.tokens.refreshExpiresAt == clock.now().adding(milliseconds: 60 * 86_400_000))
            let claims = try #require(
                await fixture.signer.verify(login.tokens.accessToken),
                "a JWT signed by the provider"
            )
            #expect(claims["sub"] == .string(User.id(provider: "local", subject: account.id)))
            #expect(claims["email"] == "a@example.com")
            #expect(claims["iss"] == "usher-test")
            #expect(claims["exp"] == .int(login.tokens.expiresAt.secondsSinceEpoch))

            let wrong = ProviderError.invalidCredentials("wrong email or password")
            await #expect(throws: wrong) {
                try await provider.authenticate(credentials: Self.emailPassword("a@example.com", "secret2"))
            }
            await #expect(throws: wrong, "an unknown email is indistinguishable from a wrong password") {
                try await provider.authenticate(credentials: Self.emailPassword("b@example.com", "secret1"))
            }
            await #expect(throws: ProviderError.self) {
                try await provider.authenticate(credentials: ["type": "email_password", "email": "a@example.com"])
            }
            await #expect(throws: ProviderError.self) {
                try await provider.authenticate(credentials: ["type": "carrier_pigeon"])
            }
        }
    }

    @Test("anonymous login gives a fresh subject, unless turned off", .timeLimit(.minutes(1)))
    func anonymous() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let first = try await provider.authenticate(credentials: ["type": "anonymous"])
            let second = try await provider.authenticate(credentials: ["type": "anonymous"])
            #expect(first.kind == CredentialType.anonymous)
            #expect(first.email == nil)
            #expect(first.subject != second.subject)
            #expect(provider.credentialTypes.contains(CredentialType.anonymous))
        }
        try await Self.withProvider(allowAnonymous: false) { fixture in
            let provider = fixture.provider
            await #expect {
                try await provider.authenticate(credentials: ["type": "anonymous"])
            } throws: { error in
                guard case ProviderError.unsupportedCredentials = error else { return false }
                return true
            }
            #expect(!provider.credentialTypes.contains(CredentialType.anonymous))
        }
    }

    @Test("API keys: create, list, log in as the account, delete", .timeLimit(.minutes(1)))
    func apiKeys() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let clock = fixture.clock
            _ = try await provider.register(email: "a@example.com", password: "secret1")
            _ = try await provider.register(email: "b@example.com", password: "secret1")
            let account = try await provider.authenticate(credentials: Self.emailPassword("a@example.com", "secret1"))
            let other = try await provider.authenticate(credentials: Self.emailPassword("b@example.com", "secret1"))

            let (key, createdAt) = try await provider.createAPIKey(subject: account.subject, name: "ci")
            #expect(createdAt == clock.now())
            clock.advance(bySeconds: 1)
            let (secondKey, _) = try await provider.createAPIKey(subject: account.subject, name: "laptop")
            #expect(key != secondKey)
            await #expect(throws: ProviderError.self, "names are unique per account") {
                try await provider.createAPIKey(subject: account.subject, name: "ci")
            }
            await #expect(throws: ProviderError.self) {
                try await provider.createAPIKey(subject: account.subject, name: "no spaces")
            }
            #expect(try await provider.listAPIKeys(subject: account.subject).map(\.name) == ["ci", "laptop"])
            #expect(try await provider.listAPIKeys(subject: other.subject).isEmpty)

            let viaKey = try await provider.authenticate(credentials: ["type": "api_key", "key": .string(key)])
            #expect(viaKey.subject == account.subject)
            #expect(viaKey.kind == CredentialType.apiKey)
            #expect(viaKey.email == "a@example.com")

            #expect(try await provider.deleteAPIKey(subject: other.subject, name: "ci") == false)
            #expect(try await provider.deleteAPIKey(subject: account.subject, name: "ci"))
            #expect(try await provider.deleteAPIKey(subject: account.subject, name: "ci") == false)
            #expect(try await provider.listAPIKeys(subject: account.subject).map(\.name) == ["laptop"])
            await #expect(throws: ProviderError.invalidCredentials("unknown or deleted API key")) {
                try await provider.authenticate(credentials: ["type": "api_key", "key": .string(key)])
            }
            await #expect(throws: ProviderError.invalidCredentials("unknown or deleted API key")) {
                try await provider.authenticate(credentials: ["type": "api_key", "key": "usher_guess"])
            }
            #expect(
                try await provider.authenticate(credentials: ["type": "api_key", "key": .string(secondKey)]).subject
                    == account.subject
            )
        }
    }

    @Test("refresh rotates the refresh token; an old one never works again", .timeLimit(.minutes(1)))
    func rotation() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let clock = fixture.clock
            let login = try await provider.authenticate(credentials: ["type": "anonymous"])
            clock.advance(bySeconds: 60)
            let first = try await fixture.refresh(Self.session(login))
            #expect(first.tokens.refreshToken != nil)
            #expect(first.tokens.refreshToken != login.tokens.refreshToken)
            #expect(first.tokens.accessToken != login.tokens.accessToken)
            #expect(first.tokens.issuedAt == clock.now())

            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await provider.refresh(Self.session(login))
            }
            let second = try await fixture.refresh(Self.session(login.subject, first.tokens))
            #expect(second.tokens.refreshToken != first.tokens.refreshToken)
            await #expect(throws: ProviderError.self) {
                try await provider.refresh(Self.session(login.subject, first.tokens))
            }
        }
    }

    @Test(
        "refresh itself writes nothing: the rotation happens when its pending write is committed, once",
        .timeLimit(.minutes(1))
    )
    func rotationIsDeferredToTheCommit() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let login = try await provider.authenticate(credentials: ["type": "anonymous"])
            // Two answers for the same token (as when the first could not be stored): neither consumed the grant.
            let uncommitted = try await provider.refresh(Self.session(login))
            let answer = try await provider.refresh(Self.session(login))
            let rotation = try #require(answer.pendingWrite)
            let staleRotation = try #require(uncommitted.pendingWrite)
            try await fixture.database.commit(
                SessionChange(generation: nil, saved: [], deleted: [], pendingWrites: [rotation])
            )
            // Committed: the new token works, the old one does not, and the other answer's rotation can no longer be
            // committed (the grant it consumes is gone), nor anything committed with it.
            let next = try await provider.refresh(Self.session(login.subject, answer.tokens))
            #expect(next.tokens.refreshToken != answer.tokens.refreshToken)
            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await provider.refresh(Self.session(login))
            }
            let bystander = User(
                id: "u_bystander",
                provider: "local",
                subject: "s",
                kind: "anonymous",
                email: nil,
                name: nil,
                state: .loggedOut,
                addedGeneration: 1,
                createdAt: fixture.clock.now(),
                lastLoginAt: nil,
                lastActiveAt: nil,
                activeGeneration: 0,
                tokens: nil,
                providerData: nil
            )
            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await fixture.database.commit(
                    SessionChange(
                        generation: 7,
                        saved: [bystander],
                        deleted: [],
                        pendingWrites: [staleRotation]
                    )
                )
            }
            let state = try await fixture.database.loadSessions()
            #expect(state.generation == 0, "the whole change was rolled back")
            #expect(state.users.isEmpty)
        }
    }

    @Test("a revoked session cannot be refreshed", .timeLimit(.minutes(1)))
    func revoke() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let login = try await provider.authenticate(credentials: ["type": "anonymous"])
            #expect(await provider.revoke(Self.session(login)))
            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await provider.refresh(Self.session(login))
            }
            #expect(await provider.revoke(Self.session(login)), "revoking twice is still revoked")
        }
    }

    @Test("refresh_token_lifetime counts from login: rotation never extends it", .timeLimit(.minutes(1)))
    func absoluteLifetime() async throws {
        try await Self.withProvider(
            accessLifetimeMilliseconds: 10 * 60_000,
            refreshLifetimeMilliseconds: 60 * 60_000
        ) { fixture in
            let provider = fixture.provider
            let clock = fixture.clock
            let start = clock.now()
            let end = start.adding(seconds: 3600)
            let login = try await provider.authenticate(credentials: ["type": "anonymous"])
            #expect(login.tokens.refreshExpiresAt == end)

            clock.advance(bySeconds: 30 * 60)
            let middle = try await fixture.refresh(Self.session(login))
            #expect(middle.tokens.refreshExpiresAt == end)
            #expect(middle.tokens.expiresAt == start.adding(seconds: 40 * 60))

            clock.advance(bySeconds: 25 * 60)
            let late = try await fixture.refresh(Self.session(login.subject, middle.tokens))
            #expect(late.tokens.refreshExpiresAt == end)
            #expect(late.tokens.expiresAt == end, "an access token never outlives its session")

            clock.advance(bySeconds: 5 * 60)
            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await provider.refresh(Self.session(login.subject, late.tokens))
            }
        }
    }

    @Test("passwords are stored hashed and salted, never in the clear", .timeLimit(.minutes(1)))
    func passwordsHashed() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let database = fixture.database
            _ = try await provider.register(email: "a@example.com", password: "correct horse")
            _ = try await provider.register(email: "b@example.com", password: "correct horse")
            let a = try #require(try await database.localAccount(provider: "local", email: "a@example.com"))
            let b = try #require(try await database.localAccount(provider: "local", email: "b@example.com"))
            #expect(!a.passwordHash.contains("correct horse"))
            #expect(a.passwordHash.hasPrefix("$scrypt$"))
            #expect(a.passwordHash != b.passwordHash, "each password has its own salt")
        }
    }

    @Test("through the registry, an API key logs in as the same user as the password", .timeLimit(.minutes(1)))
    func registryWithLocalProvider() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let database = fixture.database
            let clock = fixture.clock
            let registry = SessionRegistry(
                store: database,
                providers: [provider],
                defaultProvider: "local",
                clock: clock,
                logger: Harness.logger
            )
            try await registry.load()
            _ = try await registry.register(provider: nil, email: "a@example.com", password: "secret1")
            let user = try await registry.login(
                provider: nil,
                credentials: Self.emailPassword("a@example.com", "secret1")
            ).user
            let created = try await registry.createAPIKey(name: "ci", userID: nil)
            #expect(created.userID == user.id)
            #expect(try await registry.listAPIKeys(userID: nil).apiKeys.map(\.name) == ["ci"])
            _ = try await registry.logout(userID: nil)

            let viaKey = try await registry.login(
                provider: nil,
                credentials: ["type": "api_key", "key": .string(created.key)]
            ).user
            #expect(viaKey.id == user.id)
            #expect(viaKey.email == "a@example.com")
            #expect(await registry.listUsers().users.count == 1)

            // The registry's refresh rotates at the provider and keeps the new token.
            let before = try #require(try await database.loadSessions().users.first?.tokens)
            clock.advance(bySeconds: 60)
            _ = try await registry.refresh(userID: nil)
            let after = try #require(try await database.loadSessions().users.first?.tokens)
            #expect(after.refreshToken != before.refreshToken)
            await #expect(throws: ProviderError.self) {
                try await provider.refresh(Self.session(user.id, before))
            }

            _ = try await registry.deleteAPIKey(name: "ci", userID: nil)
            await #expect(throws: SessionError.apiKeyNotFound("ci")) {
                try await registry.deleteAPIKey(name: "ci", userID: nil)
            }
            _ = try await registry.logout(userID: nil)
            await #expect(throws: ProviderError.invalidCredentials("unknown or deleted API key")) {
                try await registry.login(provider: nil, credentials: ["type": "api_key", "key": .string(created.key)])
            }
        }
    }

    @Test("a session ends at its absolute lifetime, without refreshes that cannot extend it", .timeLimit(.minutes(1)))
    func sessionEnd() async throws {
        try await Self.withProvider(
            accessLifetimeMilliseconds: 30 * 60_000,
            refreshLifetimeMilliseconds: 60 * 60_000
        ) { fixture in
            let clock = fixture.clock
            let registry = SessionRegistry(
                store: fixture.database,
                providers: [fixture.provider],
                defaultProvider: "local",
                clock: clock,
                logger: Harness.logger
            )
            try await registry.load()
            _ = try await registry.register(provider: nil, email: "a@example.com", password: "secret1")
            let end = clock.now().adding(seconds: 3600)
            let user = try await registry.login(
                provider: nil,
                credentials: Self.emailPassword("a@example.com", "secret1")
            ).user
            #expect(user.refreshTokenExpiresAt == end)
            var log = EventLog(registry)
            log.names = [user.id: "a"]

            var seen: [String] = []
            var expiries: [Timestamp] = []
            try await withRunningScheduler(registry) {
                // Jump from one deadline to the next until the session is over.
                while seen.count < 10, let deadline = registry.scheduler.earliestDeadline() {
                    clock.advance(byMilliseconds: deadline.millisecondsSinceEpoch - clock.now().millisecondsSinceEpoch)
                    let event = try #require(await log.next())
                    seen.append(log.summary(event))
                    if case .tokenRefreshed(_, let expiresAt) = event.payload { expiries.append(expiresAt) }
                    if event.name == .userLoggedOut { _ = await log.next() }
                }
            }
            #expect(
                seen == [
                    "1 token_refreshed a", "1 token_refreshed a", "2 user_logged_out a refresh_token_expired",
                ]
            )
            #expect(expiries.last == end, "the last refresh gives a token that lasts as long as the session")
            #expect(clock.now() == end)
            await #expect(throws: SessionError.userLoggedOut(user.id)) {
                try await registry.accessToken(userID: user.id, minValidSeconds: 0)
            }
        }
    }
}
