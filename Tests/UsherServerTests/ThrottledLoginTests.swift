import Foundation
import Logging
import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherServer
import UsherStore
import UsherTestSupport

/// A provider that knows one password and counts how often it was asked: a refused attempt must never reach it (for
/// the local provider, "reach it" means an scrypt hash).
final class CountingProvider: IdentityProvider, AccountRegistering {
    let name = "local"
    let type = "local"
    let credentialTypes = ["email_password", "anonymous", "api_key"]
    let clock: ManualClock
    private let calls = Mutex(0)

    init(clock: ManualClock) { self.clock = clock }

    var callCount: Int { self.calls.withLock { $0 } }

    func authenticate(credentials: [String: JSONValue]) async throws -> Authentication {
        self.calls.withLock { $0 += 1 }
        let subject: String
        switch credentials["type"]?.stringValue {
        case "anonymous":
            subject = "anonymous:\(UUID().uuidString)"
        case "email_password":
            guard credentials["password"]?.stringValue == "right", let email = credentials["email"]?.stringValue else {
                throw ProviderError.invalidCredentials("wrong email or password")
            }
            subject = email
        default:
            throw ProviderError.invalidCredentials("unknown or deleted API key")
        }
        let now = self.clock.now()
        return Authentication(
            subject: subject,
            kind: credentials["type"]?.stringValue ?? "",
            email: subject.contains("@") ? subject : nil,
            tokens: TokenSet(
                accessToken: "a",
                issuedAt: now,
                expiresAt: now.adding(milliseconds: 3_600_000),
                refreshToken: nil,
                refreshExpiresAt: nil
            )
        )
    }

    func refresh(_ session: ProviderSession) async throws -> RefreshedSession {
        throw ProviderError.sessionRevoked("no refresh here")
    }

    func revoke(_ session: ProviderSession) async -> Bool { true }

    func register(email: String, password: String) async throws -> String {
        self.calls.withLock { $0 += 1 }
        throw ProviderError.accountExists
    }

    func changePassword(email: String, oldPassword: String, newPassword: String) async throws -> String {
        self.calls.withLock { $0 += 1 }
        throw ProviderError.invalidCredentials("wrong email or password")
    }
}

/// The throttle as the dispatcher applies it: refused before the provider is asked, answered `rate_limited` with
/// `retry_after`, and audited.
@Suite(.timeLimit(.minutes(1)))
struct ThrottledLoginTests {
    struct Setup {
        let provider: CountingProvider
        let dispatcher: Dispatcher
        let records: LogRecorder
        let time: TestTime

        init() async throws {
            let clock = ManualClock()
            self.provider = CountingProvider(clock: clock)
            self.records = LogRecorder()
            self.time = TestTime()
            let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            let registry = SessionRegistry(
                store: try AppDatabase.inMemory(),
                providers: [self.provider],
                defaultProvider: "local",
                clock: clock,
                logger: quiet
            )
            try await registry.load()
            var settings = LoginThrottleSettings()
            settings.accountFreeFailures = 2
            settings.accountLockoutFailures = 3
            settings.lockout = .seconds(3600)
            settings.forgetAfter = .seconds(7200)
            self.dispatcher = Dispatcher(
                registry: registry,
                version: "test",
                settings: ServerSettings(
                    limits: ServerLimits(),
                    // The peers of these tests (uids 1000, 1001, 2000) may do everything: only the throttle refuses.
                    policy: AccessPolicy(
                        daemonUID: 0,
                        rules: [1000, 1001, 2000].map { AccessRule(.uid($0), allow: Set(Permission.allCases)) }
                    )
                ),
                auditLog: AuditLog(now: self.time.source),
                throttle: LoginThrottle(settings: settings, now: self.time.source),
                connectionCount: { 1 }
            )
        }

        func context(uid: UInt32) -> Dispatcher.Context {
            Dispatcher.Context(
                peer: PeerCredentials(uid: uid, gid: uid, pid: 77),
                logger: self.records.logger()
            )
        }

        /// Sends one request line; returns the response object.
        func send(_ line: String, uid: UInt32 = 1000) async throws -> [String: JSONValue] {
            guard
                case .response(let reply) = await self.dispatcher.handle(
                    line: Array(line.utf8),
                    context: self.context(uid: uid)
                ),
                case .object(let object) = try JSONDecoder().decode(JSONValue.self, from: Data(reply.line))
            else { throw TestFailure("not a response object") }
            return object
        }

        func login(_ email: String, _ password: String, uid: UInt32 = 1000) async throws -> [String: JSONValue] {
            try await self.send(
                #"{"method":"login","params":{"credentials":"#
                    + #"{"type":"email_password","email":"\#(email)","password":"\#(password)"}}}"#,
                uid: uid
            )
        }
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func code(_ response: [String: JSONValue]) -> String? {
        guard case .object(let error)? = response["error"] else { return nil }
        return error["code"]?.stringValue
    }

    static func retryAfter(_ response: [String: JSONValue]) -> Int64? {
        guard case .object(let error)? = response["error"], case .object(let data)? = error["data"],
            case .int(let seconds)? = data["retry_after"]
        else { return nil }
        return seconds
    }

    @Test func afterTheThresholdEvenTheRightPasswordIsRefusedWithoutAskingTheProvider() async throws {
        let setup = try await Setup()
        for _ in 0..<3 {
            #expect(Self.code(try await setup.login("ann@example.com", "wrong")) == "invalid_credentials")
        }
        #expect(setup.provider.callCount == 3)

        let refused = try await setup.login("ann@example.com", "right")
        #expect(Self.code(refused) == "rate_limited")
        #expect(Self.retryAfter(refused) == 3600)
        // Refused before the provider (and so before any password hash) was asked; register too.
        let register = try await setup.send(
            #"{"method":"register","params":{"email":"Ann@Example.com","password":"right-again"}}"#
        )
        #expect(Self.code(register) == "rate_limited")
        #expect(setup.provider.callCount == 3)

        // Another account from the same peer, and the same account's neighbour on another uid, are unaffected.
        #expect(Self.code(try await setup.login("bob@example.com", "right")) == nil)
        #expect(Self.code(try await setup.login("carol@example.com", "right", uid: 1001)) == nil)
        // Anonymous logins prove nothing and are never throttled.
        #expect(
            Self.code(try await setup.send(#"{"method":"login","params":{"credentials":{"type":"anonymous"}}}"#)) == nil
        )

        // The refusal is in the audit log with its retry_after (written off the request path: flushed here, where no
        // audit service runs).
        setup.dispatcher.auditLog.flush()
        let audited = setup.records.all.filter { $0.message == "audit" && $0.metadata["outcome"] == "rate_limited" }
        #expect(audited.first?.metadata["retry_after"] == "3600")
        #expect(audited.first?.metadata["action"] == "login")

        // An hour later the right password works at once.
        setup.time.advance(.seconds(3600))
        #expect(Self.code(try await setup.login("ann@example.com", "right")) == nil)
    }

    @Test func guessingAPIKeysIsThrottledPerPeer() async throws {
        let setup = try await Setup()
        // Twenty free failures for a peer by default, then waits.
        for _ in 0..<21 {
            let response = try await setup.send(
                #"{"method":"login","params":{"credentials":{"type":"api_key","key":"usher_guess"}}}"#
            )
            #expect(Self.code(response) == "invalid_credentials")
        }
        let refused = try await setup.send(
            #"{"method":"login","params":{"credentials":{"type":"api_key","key":"usher_guess"}}}"#
        )
        #expect(Self.code(refused) == "rate_limited")
        #expect(Self.retryAfter(refused) == 1)
        #expect(setup.provider.callCount == 21)
        let elsewhere = try await setup.send(
            #"{"method":"login","params":{"credentials":{"type":"api_key","key":"usher_guess"}}}"#,
            uid: 2000
        )
        #expect(Self.code(elsewhere) == "invalid_credentials")
    }
}
