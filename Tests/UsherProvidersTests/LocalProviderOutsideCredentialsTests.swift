import Crypto
import Foundation
import NIOPosix
import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

@testable import UsherProviders

#if canImport(Glibc)
import Glibc
#endif

/// The local provider's outside credentials: `jwt`, `id_token` and `function`, against the in-memory database.
@Suite(.timeLimit(.minutes(2)))
struct LocalProviderOutsideCredentialsTests {
    static let issuer = "https://auth.example.com"
    static let now: Int64 = 1_800_000_000

    struct Fixture {
        var provider: LocalProvider
        var clock: ManualClock
        var signer: TokenSigner
        var database: AppDatabase

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

    /// A test directory holding the hook script, and the configuration of the provider under test; the directory is
    /// removed when the setup goes away.
    final class Setup {
        let directory: TestDirectory
        let hook: String
        var configuration = LocalProviderConfiguration(issuer: "usher-test")

        init() throws {
            self.directory = try TestDirectory()
            self.hook = try TestHooks.install(in: self.directory)
        }

        deinit { self.directory.remove() }

        /// Writes `keys` as a JWK set file and returns its path.
        func keySet(_ keys: [TestIssuerKey], named name: String = "jwks.json") throws -> String {
            try self.directory.write(name, TestJWT.keySet(keys.map { $0.publicJWK() }))
            return self.directory.file(name)
        }

        /// Runs `body` with a local provider of this configuration, a cheap scrypt cost on a one-thread pool, an
        /// in-memory database and a manual clock.
        func run<T>(_ body: (Fixture) async throws -> T) async throws -> T {
            let pool = NIOThreadPool(numberOfThreads: 1)
            pool.start()
            let clock = ManualClock()
            let signer = TokenSigner(privateKey: P256.Signing.PrivateKey())
            let database = try AppDatabase.inMemory()
            let provider = LocalProvider(
                name: "local",
                configuration: self.configuration,
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
                    Fixture(provider: provider, clock: clock, signer: signer, database: database)
                )
                try await pool.shutdownGracefully()
                return result
            } catch {
                try await pool.shutdownGracefully()
                throw error
            }
        }
    }

    static func claims(_ changes: [String: JSONValue] = [:]) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": .string(Self.issuer), "aud": "usher", "sub": "user-1", "email": "ann@example.com",
            "iat": .int(Self.now), "exp": .int(Self.now + 600),
        ]
        claims.merge(changes) { _, new in new }
        return claims
    }

    /// The error `authenticate` throws, or nil when it accepts.
    static func failure(_ provider: LocalProvider, _ credentials: [String: JSONValue]) async -> ProviderError? {
        do {
            _ = try await provider.authenticate(credentials: credentials)
            return nil
        } catch let error as ProviderError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    // MARK: Configuration and listing

    @Test func credentialTypesFollowTheConfiguration() async throws {
        try await Setup().run { fixture in
            #expect(fixture.provider.credentialTypes == ["email_password", "anonymous", "api_key"])
            for type in ["jwt", "id_token", "function"] {
                guard
                    case .unsupportedCredentials(let message)? = await Self.failure(
                        fixture.provider,
                        ["type": .string(type)]
                    )
                else {
                    Issue.record("\(type) without configuration was not unsupported")
                    continue
                }
                #expect(message.contains(type))
            }
        }
        let setup = try Setup()
        setup.configuration.jwt = OutsideTokenConfiguration(
            issuer: Self.issuer,
            audiences: ["usher"],
            keys: .file("/x")
        )
        setup.configuration.idTokenIssuers["google"] = OutsideTokenConfiguration(
            issuer: "https://accounts.google.com",
            audiences: ["1234.apps.googleusercontent.com"],
            keys: .url("https://www.googleapis.com/oauth2/v3/certs")
        )
        setup.configuration.function = FunctionHookConfiguration(
            command: [setup.hook],
            supervisor: try Self.supervisor()
        )
        try await setup.run { fixture in
            #expect(
                fixture.provider.credentialTypes == [
                    "email_password", "anonymous", "api_key", "jwt", "id_token", "function",
                ]
            )
        }
    }

    // MARK: jwt

    @Test func jwtLoginIssuesLocalTokensForAStableSubject() async throws {
        let rsa = try TestIssuerKey.rsa(kid: "rsa")
        let ec = TestIssuerKey.p256(kid: "ec")
        let setup = try Setup()
        setup.configuration.jwt = OutsideTokenConfiguration(
            issuer: Self.issuer,
            audiences: ["usher"],
            keys: .file(try setup.keySet([rsa, ec]))
        )
        try await setup.run { fixture in
            let provider = fixture.provider
            let first = try await provider.authenticate(credentials: [
                "type": "jwt", "token": .string(try rsa.sign(Self.claims())),
            ])
            #expect(first.subject == "jwt:\(Self.issuer):user-1")
            #expect(first.kind == "jwt")
            #expect(first.email == "ann@example.com")
            #expect(first.tokens.refreshToken != nil)
            #expect(first.tokens.refreshExpiresAt != nil)
            // The access token is the daemon's own, for the user id.
            let accessClaims = try #require(await fixture.signer.verify(first.tokens.accessToken))
            #expect(accessClaims["sub"] == .string(User.id(provider: "local", subject: first.subject)))
            #expect(accessClaims["email"] == "ann@example.com")

            // Another token, another key, the same user: the same subject, so the same user id.
            let second = try await provider.authenticate(credentials: [
                "type": "jwt", "token": .string(try ec.sign(Self.claims())),
            ])
            #expect(second.subject == first.subject)
            #expect(
                User.id(provider: "local", subject: second.subject)
                    == User.id(provider: "local", subject: first.subject)
            )
            let other = try await provider.authenticate(
                credentials: ["type": "jwt", "token": .string(try ec.sign(Self.claims(["sub": "user-2"])))]
            )
            #expect(other.subject != first.subject)

            // Refresh and revoke work exactly as for email/password sessions.
            let session = ProviderSession(
                userID: User.id(provider: "local", subject: first.subject),
                subject: first.subject,
                tokens: first.tokens,
                providerData: nil
            )
            fixture.clock.advance(bySeconds: 60)
            let refreshed = try await fixture.refresh(session)
            #expect(refreshed.tokens.refreshToken != first.tokens.refreshToken)
            #expect(refreshed.tokens.refreshExpiresAt == first.tokens.refreshExpiresAt)
            let current = ProviderSession(
                userID: session.userID,
                subject: session.subject,
                tokens: refreshed.tokens,
                providerData: nil
            )
            #expect(await provider.revoke(current))
            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await provider.refresh(current)
            }

            // Users of outside credentials have no local account, so no API keys.
            await #expect(throws: ProviderError.unsupportedCredentials("API keys belong to email/password accounts")) {
                try await provider.createAPIKey(subject: first.subject, name: "laptop")
            }
        }
    }

    @Test func jwtClaimNamesAreConfigurable() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let setup = try Setup()
        var jwt = OutsideTokenConfiguration(
            issuer: Self.issuer,
            audiences: ["usher"],
            keys: .file(try setup.keySet([key]))
        )
        jwt.subjectClaim = "uid"
        jwt.emailClaim = "mail"
        setup.configuration.jwt = jwt
        try await setup.run { fixture in
            let login = try await fixture.provider.authenticate(
                credentials: [
                    "type": "jwt",
                    "token": .string(try key.sign(Self.claims(["uid": 4711, "mail": "bob@example.com"]))),
                ]
            )
            #expect(login.subject == "jwt:\(Self.issuer):4711")
            #expect(login.email == "bob@example.com")
            let error = await Self.failure(
                fixture.provider,
                ["type": "jwt", "token": .string(try key.sign(Self.claims()))]
            )
            #expect(error == .invalidCredentials("JWT rejected: the token has no uid claim"))
        }
    }

    @Test func jwtRefusalsSayWhichCheckFailed() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let impostor = TestIssuerKey.p256(kid: "ec")
        let setup = try Setup()
        setup.configuration.jwt = OutsideTokenConfiguration(
            issuer: Self.issuer,
            audiences: ["usher"],
            keys: .file(try setup.keySet([key]))
        )
        try await setup.run { fixture in
            let cases: [(String, String)] = [
                (try impostor.sign(Self.claims()), "the signature does not verify"),
                (try key.sign(Self.claims(["iss": "https://evil.example"])), "issuer"),
                (try key.sign(Self.claims(["aud": "someone-else"])), "audience"),
                (try key.sign(Self.claims(["exp": .int(Self.now - 3600)])), "expired"),
                (try key.sign(Self.claims(["nbf": .int(Self.now + 3600)])), "not valid yet"),
                (TestJWT.unsigned(Self.claims(), kid: "ec"), "unsupported algorithm"),
                (TestJWT.hs256(Self.claims(), secret: Array(key.publicPEM.utf8), kid: "ec"), "unsupported algorithm"),
                (try key.sign(Self.claims(), kid: "nope"), "unknown key"),
                ("not.a.jwt", "malformed"),
            ]
            for (token, check) in cases {
                let error = await Self.failure(fixture.provider, ["type": "jwt", "token": .string(token)])
                guard case .invalidCredentials(let message)? = error else {
                    Issue.record("\(check): \(String(describing: error))")
                    continue
                }
                #expect(message.hasPrefix("JWT rejected: ") && message.contains(check), "\(message)")
                #expect(!message.contains(token))
            }
            #expect(
                await Self.failure(fixture.provider, ["type": "jwt"])
                    == .invalidParams("jwt credentials need a string token")
            )
        }
    }

    // MARK: id_token

    @Test func idTokensFromNamedIssuers() async throws {
        let google = try TestIssuerKey.rsa(kid: "g1")
        let apple = TestIssuerKey.p256(kid: "a1")
        let setup = try Setup()
        try setup.directory.write("google.json", TestJWT.keySet([google.publicJWK()]))
        try setup.directory.write("apple.json", TestJWT.keySet([apple.publicJWK()]))
        setup.configuration.idTokenIssuers["google"] = OutsideTokenConfiguration(
            issuer: "https://accounts.google.com",
            audiences: ["1234.apps.googleusercontent.com"],
            keys: .file(setup.directory.file("google.json"))
        )
        setup.configuration.idTokenIssuers["apple"] = OutsideTokenConfiguration(
            issuer: "https://appleid.apple.com",
            audiences: ["com.example.app"],
            keys: .file(setup.directory.file("apple.json"))
        )
        // A key server that is not there: nothing can ever be cached.
        setup.configuration.idTokenIssuers["down"] = OutsideTokenConfiguration(
            issuer: "https://down.example",
            audiences: ["usher"],
            keys: .url("http://127.0.0.1:9/jwks.json")
        )
        try await setup.run { fixture in
            let provider = fixture.provider
            let googleClaims: [String: JSONValue] = [
                "iss": "https://accounts.google.com", "aud": "1234.apps.googleusercontent.com",
                "sub": "10769150350006150715113082367",
                "email": "ann@gmail.com", "email_verified": true, "name": "Ann", "nonce": "n-1",
                "iat": .int(Self.now), "exp": .int(Self.now + 3600),
            ]
            let login = try await provider.authenticate(
                credentials: [
                    "type": "id_token", "issuer": "google", "token": .string(try google.sign(googleClaims)),
                    "nonce": "n-1",
                ]
            )
            #expect(login.subject == "id_token:https://accounts.google.com:10769150350006150715113082367")
            #expect(login.kind == "id_token")
            #expect(login.email == "ann@gmail.com")
            #expect(login.name == "Ann")

            // The nonce the client passes must be the token's.
            #expect(
                await Self.failure(
                    provider,
                    [
                        "type": "id_token", "issuer": "google", "token": .string(try google.sign(googleClaims)),
                        "nonce": "n-2",
                    ]
                ) == .invalidCredentials("ID token rejected: the nonce does not match")
            )
            // A Google token is not an Apple token.
            #expect(
                await Self.failure(
                    provider,
                    ["type": "id_token", "issuer": "apple", "token": .string(try google.sign(googleClaims))]
                ) == .invalidCredentials("ID token rejected: unknown key: no key with kid \"g1\"")
            )
            // An unverified email is not taken.
            let appleLogin = try await provider.authenticate(
                credentials: [
                    "type": "id_token", "issuer": "apple",
                    "token": .string(
                        try apple.sign([
                            "iss": "https://appleid.apple.com", "aud": "com.example.app", "sub": "001234.abcd",
                            "email": "x@privaterelay.appleid.com", "email_verified": "false",
                            "exp": .int(Self.now + 600),
                        ])
                    ),
                ]
            )
            #expect(appleLogin.subject == "id_token:https://appleid.apple.com:001234.abcd")
            #expect(appleLogin.email == nil)

            // Issuers that are not configured, and keys that cannot be had.
            guard
                case .unsupportedCredentials(let message)? = await Self.failure(
                    provider,
                    ["type": "id_token", "issuer": "facebook", "token": "x.y.z"]
                )
            else {
                Issue.record("an unknown issuer name was not unsupported")
                return
            }
            #expect(message.contains("facebook") && message.contains("google"))
            guard
                case .unavailable? = await Self.failure(
                    provider,
                    ["type": "id_token", "issuer": "down", "token": .string(try apple.sign(Self.claims()))]
                )
            else {
                Issue.record("an unreachable JWK set URL did not make the provider unavailable")
                return
            }
            #expect(
                await Self.failure(provider, ["type": "id_token", "token": "x.y.z"])
                    == .invalidParams("id_token credentials need a string issuer (a configured issuer's name)")
            )
        }
    }

    // MARK: function

    static func function(_ mode: String, user: String = "ann") -> [String: JSONValue] {
        ["type": "function", "payload": ["mode": .string(mode), "user": .string(user)]]
    }

    /// The `usherd` that supervises each run: the built one, since these tests run inside the test runner.
    static func supervisor() throws -> String {
        try BuiltProducts.path(of: "usherd")
    }

    /// A provider whose function is the test hook (or the gated one). The default timeout is a hang guard only: a
    /// run's outcome must not depend on how fast the machine starts processes.
    static func withHook<T>(
        timeout: Int64 = 60_000,
        maximumConcurrent: Int = 4,
        gated: Bool = false,
        _ body: (Setup, Fixture) async throws -> T
    ) async throws -> T {
        let setup = try Setup()
        let command = gated ? try GatedHook.install(in: setup.directory) : setup.hook
        setup.configuration.function = FunctionHookConfiguration(
            command: [command],
            supervisor: try Self.supervisor(),
            timeoutMilliseconds: timeout,
            maximumConcurrent: maximumConcurrent
        )
        return try await setup.run { fixture in try await body(setup, fixture) }
    }

    @Test func functionAcceptsAndRefuses() async throws {
        try await Self.withHook { _, fixture in
            let provider = fixture.provider
            let login = try await provider.authenticate(credentials: Self.function("accept", user: "badge-42"))
            #expect(login.subject == "function:badge-42")
            #expect(login.kind == "function")
            #expect(login.email == "badge-42@example.com")
            #expect(login.name == "Hook User")
            #expect(login.tokens.refreshToken != nil)
            let again = try await provider.authenticate(credentials: Self.function("accept", user: "badge-42"))
            #expect(again.subject == login.subject)

            #expect(await Self.failure(provider, Self.function("refuse")) == .invalidCredentials("no such badge"))
            #expect(
                await Self.failure(provider, ["type": "function", "payload": "not an object"])
                    == .invalidParams("function credentials need an object payload")
            )
        }
    }

    @Test func functionFailuresAreRefusalsWithClearMessages() async throws {
        try await Self.withHook { _, fixture in
            let provider = fixture.provider
            let expectations: [(String, ProviderError)] = [
                ("crash", .invalidCredentials("the authentication function crashed (signal 11)")),
                ("garbage", .invalidCredentials("the authentication function's output is not a JSON object")),
                ("array", .invalidCredentials("the authentication function's output is not a JSON object")),
                (
                    "huge",
                    .invalidCredentials("the authentication function's output is too large (more than 65536 bytes)")
                ),
                ("fail", .invalidCredentials("the authentication function exited with status 3")),
                (
                    "unknown-mode-answers-an-error",
                    .invalidCredentials("unknown mode")
                ),
            ]
            for (mode, expected) in expectations {
                #expect(await Self.failure(provider, Self.function(mode)) == expected, "mode \(mode)")
            }
        }
    }

    @Test func aFunctionThatHangsIsStoppedAtItsTimeout() async throws {
        try await Self.withHook(timeout: 1000) { _, fixture in
            let started = ContinuousClock.now
            #expect(
                await Self.failure(fixture.provider, Self.function("hang"))
                    == .invalidCredentials("the authentication function did not answer within 1s and was stopped")
            )
            // Not cut short. (How soon after the limit it ends is the machine's business; that a killed run's
            // processes are gone when it returns is `cancellingARunKillsTheCommandAndWhatItStarted`'s.)
            #expect(ContinuousClock.now - started >= .milliseconds(900))
        }
    }

    @Test func functionRunsInACleanEnvironment() async throws {
        try await Self.withHook { _, fixture in
            let login = try await fixture.provider.authenticate(credentials: Self.function("env"))
            let variables = Set(login.subject.dropFirst("function:".count).split(separator: ",").map(String.init))
            #expect(variables.contains("PATH=/usr/bin:/bin"))
            #expect(variables.contains("LANG=C.UTF-8"))
            #expect(variables.contains("USHER_PROVIDER=local"))
            // Nothing of the daemon's own environment (the shell may add PWD, SHLVL and `_` itself).
            let ours = Set(ProcessInfo.processInfo.environment.keys).subtracting(["PATH", "LANG", "PWD", "SHLVL", "_"])
            #expect(!ours.isEmpty)
            #expect(variables.allSatisfy { variable in !ours.contains(String(variable.prefix { $0 != "=" })) })
        }
    }

    @Test func functionRunsAtMostMaxConcurrentAtOnce() async throws {
        // The gated hook holds every run until the gate opens: the first three are then under way at once whatever
        // the machine's speed, and the others wait their turn (however long that takes) instead of being turned away.
        try await Self.withHook(timeout: 120_000, maximumConcurrent: 3, gated: true) { setup, fixture in
            let provider = fixture.provider
            let subjects = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        try await provider.authenticate(credentials: Self.function("gated", user: "user-\(index)"))
                            .subject
                    }
                }
                try await GatedHook.waitUntilStarted(3, in: setup.directory)
                // Three hold the three slots; no fourth has started beside them.
                #expect(GatedHook.started(in: setup.directory) == 3)
                try GatedHook.open(in: setup.directory)
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(subjects == Set((0..<10).map { "function:gated-user-\($0)" }))
            let runs = try TestHooks.runs(in: setup.directory)
            #expect(runs.count == 10)
            #expect(TestHooks.maximumOverlap(runs) == 3)
        }
    }

    // MARK: The process runner

    @Test func commandsGetNoDescriptorsOfTheDaemon() async throws {
        // A descriptor without close-on-exec, as a careless library might leave one; numbered high, so that it cannot
        // be mistaken for the one ls opens.
        let opened = open("/dev/null", O_RDONLY)
        let leaked = fcntl(opened, F_DUPFD, 200)
        close(opened)
        #expect(leaked >= 200)
        defer { close(leaked) }
        let outcome = await HookProcess.start(
            arguments: ["/bin/ls", "/proc/self/fd"],
            supervisor: try Self.supervisor(),
            environment: [:],
            input: [],
            timeout: .seconds(60),
            outputLimit: 65_536,
            errorLimit: 4096
        )
        #expect(outcome.ending == .exited(0))
        let descriptors = String(decoding: outcome.output, as: UTF8.self).split(separator: "\n").compactMap {
            Int32($0)
        }
        // 0, 1, 2, and the one ls opened to list the directory.
        #expect(descriptors.count == 4 && descriptors.prefix(3) == [0, 1, 2], "\(descriptors)")
        #expect(!descriptors.contains(leaked))
    }

    @Test func commandsThatCannotStartAreReported() async throws {
        let outcome = await HookProcess.start(
            arguments: ["/nonexistent/hook"],
            supervisor: try Self.supervisor(),
            environment: [:],
            input: [],
            timeout: .seconds(60),
            outputLimit: 65_536,
            errorLimit: 4096
        )
        #expect(outcome.ending == .notStarted(ENOENT))
        let setup = try Setup()
        setup.configuration.function = FunctionHookConfiguration(
            command: ["/nonexistent/hook"],
            supervisor: try Self.supervisor()
        )
        try await setup.run { fixture in
            #expect(
                await Self.failure(fixture.provider, Self.function("accept"))
                    == .unavailable("the authentication function cannot be started; see the daemon's log")
            )
        }
    }

    /// Cancelling the task of a run (its request went away) kills the command and everything it started at once: the
    /// run returns only when they are gone, a grandchild in a session of its own included.
    @Test func cancellingARunKillsTheCommandAndWhatItStarted() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        // The command records its own process ID and a `setsid` grandchild's, then sleeps far past the test.
        try directory.write(
            "sleeper.sh",
            """
            #!/bin/sh
            setsid sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 300' "$(dirname "$0")/grandchild" &
            echo $$ > "$(dirname "$0")/command.tmp" && mv "$(dirname "$0")/command.tmp" "$(dirname "$0")/command"
            exec sleep 300
            """
        )
        chmod(directory.file("sleeper.sh"), 0o755)
        let supervisor = try Self.supervisor()
        var recorded: [pid_t] = []
        defer { for pid in recorded { kill(pid, SIGKILL) } }
        let outcome = try await withThrowingTaskGroup(of: HookProcess.Outcome?.self) { group in
            group.addTask {
                await HookProcess.start(
                    arguments: [directory.file("sleeper.sh")],
                    supervisor: supervisor,
                    environment: [:],
                    input: [],
                    timeout: .seconds(600),
                    outputLimit: 65_536,
                    errorLimit: 4096
                )
            }
            // Both are running (waiting for that, not for time to pass)...
            let deadline = ContinuousClock.now + hangGuard
            while recorded.count < 2 {
                guard ContinuousClock.now < deadline else { throw TestSupportError("the command did not start") }
                try await Task.sleep(for: .milliseconds(10))
                recorded = ["command", "grandchild"].compactMap { name in
                    (try? String(contentsOfFile: directory.file(name), encoding: .utf8))
                        .flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                }
            }
            #expect(recorded.allSatisfy { kill($0, 0) == 0 })
            // ...until the run is cancelled.
            group.cancelAll()
            return try await group.next() ?? nil
        }
        #expect(outcome?.ending == .cancelled)
        // Gone, and reaped, by the time the run returned.
        for pid in recorded {
            #expect(kill(pid, 0) == -1 && errno == ESRCH, "process \(pid) is still there")
        }
    }

    @Test func theLimiterQueuesInOrderAndTurnsAwayOnlyWhenTheLineIsFull() async throws {
        let limiter = ConcurrencyLimiter(limit: 1, maximumWaiting: 2)
        let (holding, release) = AsyncStream.makeStream(of: Void.self)
        let order = Order()
        async let holder: Int? = limiter.withPermit {
            for await _ in holding { break }
            return 0
        }
        while limiter.running == 0 { try await Task.sleep(for: .milliseconds(5)) }
        async let first: Int? = limiter.withPermit {
            order.append(1)
            return 1
        }
        while limiter.waiting < 1 { try await Task.sleep(for: .milliseconds(5)) }
        async let second: Int? = limiter.withPermit {
            order.append(2)
            return 2
        }
        while limiter.waiting < 2 { try await Task.sleep(for: .milliseconds(5)) }
        // The line is full: the next caller is turned away at once; the waiting ones stay.
        #expect(await limiter.withPermit { 3 } == nil)
        #expect(limiter.waiting == 2)
        release.yield()
        release.finish()
        #expect(await holder == 0)
        #expect(await first == 1)
        #expect(await second == 2)
        #expect(order.values == [1, 2])
        #expect(limiter.running == 0 && limiter.waiting == 0)
    }

    @Test func aCancelledWaiterLeavesTheLine() async throws {
        let limiter = ConcurrencyLimiter(limit: 1, maximumWaiting: 8)
        let (holding, release) = AsyncStream.makeStream(of: Void.self)
        async let holder: Int? = limiter.withPermit {
            for await _ in holding { break }
            return 0
        }
        while limiter.running == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let waiter = Task { await limiter.withPermit { 1 } }
        while limiter.waiting == 0 { try await Task.sleep(for: .milliseconds(5)) }
        waiter.cancel()
        #expect(await waiter.value == nil)
        #expect(limiter.waiting == 0)
        release.yield()
        release.finish()
        #expect(await holder == 0)
        #expect(limiter.running == 0)
    }
}

/// The order in which callers got a permit.
private final class Order: Sendable {
    private let recorded = Mutex<[Int]>([])
    var values: [Int] { self.recorded.withLock { $0 } }
    func append(_ value: Int) { self.recorded.withLock { $0.append(value) } }
}
