import Crypto
import Logging
import NIOPosix
import Testing
import UsherCore
import UsherProtocol
import UsherProviders
import UsherStore
import UsherTestSupport

/// The embedded provider, against the in-memory database.
@Suite("Local provider")
struct LocalProviderTests {
    static let quietLogger = Logger(label: "usher.tests", factory: { _ in SwiftLogNoOpLogHandler() })

    typealias Fixture = LocalProviderFixture

    /// A local provider with a cheap scrypt cost, on a one-thread pool that `body` may use.
    static func withProvider<T>(
        allowAnonymous: Bool = true,
        allowRegistration: Bool = true,
        accessLifetimeMilliseconds: Int64 = 30 * 60_000,
        refreshLifetimeMilliseconds: Int64 = 60 * 86_400_000,
        _ body: (Fixture) async throws -> T
    ) async throws -> T {
        try await Fixture.with(
            LocalProviderConfiguration(
                accessTokenLifetimeMilliseconds: accessLifetimeMilliseconds,
                refreshTokenLifetimeMilliseconds: refreshLifetimeMilliseconds,
                allowAnonymous: allowAnonymous,
                allowRegistration: allowRegistration,
                issuer: "usher-test"
            ),
            body
        )
    }

    static func emailPassword(_ email: String, _ password: String) -> [String: JSONValue] {
        ["type": "email_password", "email": .string(email), "password": .string(password)]
    }

    static func session(_ authentication: Authentication) -> ProviderSession {
        ProviderSession(
            userID: User.id(provider: "local", subject: authentication.subject),
            subject: authentication.subject,
            tokens: authentication.tokens,
            providerData: nil
        )
    }

    static func session(_ subject: String, _ tokens: TokenSet) -> ProviderSession {
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
            await #expect(
                throws: ProviderError.invalidParams(parameter: "email", "params.email is not a valid email address")
            ) {
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
}
