import Synchronization
import UsherCore
import UsherProtocol

/// An identity provider whose answers the test decides.
///
/// `authenticate` accepts `{"type": "email_password", "email": E, "password": "ok"}` as subject E and
/// `{"type": "anonymous"}` as a fresh subject. Tokens are numbered in issue order (`access-1`/`refresh-1`, ...), live
/// for the configured lifetimes on the injected `ManualClock`, and `refresh` follows a script: succeed (rotating the
/// refresh token unless told not to), fail transiently, reject, or refuse the client. Refreshes can be held until
/// released, to test single flight and late results.
final class ScriptedProvider: IdentityProvider {
    enum Outcome: Sendable, Equatable {
        case succeed
        case failTransiently
        case reject
        /// The provider refuses the daemon's client (`invalid_client`).
        case refuseClient
        /// The provider refuses the refresh with an unspecific 4xx (`HTTP 400 invalid_request`).
        case refuse
    }

    struct RefreshCall: Sendable, Equatable {
        var refreshToken: String?
        var at: Timestamp
    }

    struct State {
        var accessLifetimeMilliseconds: Int64 = 3_600_000
        var refreshLifetimeMilliseconds: Int64?
        var rotatesRefreshTokens = true
        var script: [Outcome] = []
        var defaultOutcome = Outcome.succeed
        var issued = 0
        var authentications = 0
        var refreshCalls: [RefreshCall] = []
        var revokedRefreshTokens: [String?] = []
        var holding = false
        /// The claims the provider gives at login and `readProfile` (nil: it says nothing about profiles).
        var claims: [String: JSONValue]?
        var profileReads = 0
        var held: [CheckedContinuation<Void, Never>] = []
        /// Narrowings asked for (`+Narrowing`), and whether they wait for `releaseNarrowings`.
        var narrowings: [TokenNarrowing] = []
        var holdingNarrowings = false
        var heldNarrowings: [CheckedContinuation<Void, Never>] = []
    }

    let name: String
    let type = "scripted"
    let credentialTypes = [CredentialType.emailPassword, CredentialType.anonymous]
    let clock: ManualClock
    /// Internal for `+Narrowing`.
    let state = Mutex(State())

    init(name: String = "scripted", clock: ManualClock) {
        self.name = name
        self.clock = clock
    }

    // MARK: Controls

    /// Lifetimes of the tokens issued from now on; `refresh` nil means the refresh token has no expiry.
    func setLifetimes(accessMilliseconds: Int64, refreshMilliseconds: Int64?) {
        self.state.withLock {
            $0.accessLifetimeMilliseconds = accessMilliseconds
            $0.refreshLifetimeMilliseconds = refreshMilliseconds
        }
    }

    /// Whether a successful refresh issues a new refresh token (true) or returns none, keeping the old one.
    func setRotatesRefreshTokens(_ rotates: Bool) {
        self.state.withLock { $0.rotatesRefreshTokens = rotates }
    }

    /// Outcomes for the next refresh calls, in order; after them every call gets `then`.
    func script(_ outcomes: [Outcome], then defaultOutcome: Outcome = .succeed) {
        self.state.withLock {
            $0.script = outcomes
            $0.defaultOutcome = defaultOutcome
        }
    }

    /// Makes refresh calls wait, after they are counted, until `releaseRefreshes`.
    func holdRefreshes() {
        self.state.withLock { $0.holding = true }
    }

    func releaseRefreshes() {
        let held = self.state.withLock { state in
            state.holding = false
            defer { state.held = [] }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }

    // MARK: Observations

    var refreshCalls: [RefreshCall] { self.state.withLock { $0.refreshCalls } }
    var refreshCallCount: Int { self.state.withLock { $0.refreshCalls.count } }
    var authenticationCount: Int { self.state.withLock { $0.authentications } }
    var revokedRefreshTokens: [String?] { self.state.withLock { $0.revokedRefreshTokens } }
    /// The number of the last token pair issued (`access-N`/`refresh-N`).
    var lastIssued: Int { self.state.withLock { $0.issued } }

    // MARK: IdentityProvider

    func authenticate(credentials: [String: JSONValue]) async throws -> Authentication {
        let now = self.clock.now()
        self.state.withLock { $0.authentications += 1 }
        switch credentials["type"]?.stringValue {
        case CredentialType.emailPassword:
            guard let email = credentials["email"]?.stringValue, credentials["password"] == "ok" else {
                throw ProviderError.invalidCredentials("wrong email or password")
            }
            let tokens = self.issue(now: now, refreshExpiresAt: nil)
            let claims = self.state.withLock { $0.claims }
            return Authentication(
                subject: email,
                kind: CredentialType.emailPassword,
                email: email,
                tokens: tokens,
                profile: claims.map(UserClaims.profile(from:)),
                customData: claims.map { UserClaims.customData(from: $0, names: ["groups"]) }
            )
        case CredentialType.anonymous:
            let tokens = self.issue(now: now, refreshExpiresAt: nil)
            let subject = "anonymous-\(tokens.accessToken)"
            return Authentication(subject: subject, kind: CredentialType.anonymous, email: nil, tokens: tokens)
        default:
            throw ProviderError.unsupportedCredentials("unsupported credentials")
        }
    }

    func refresh(_ session: ProviderSession) async throws -> RefreshedSession {
        let (outcome, hold) = self.state.withLock { state in
            state.refreshCalls.append(RefreshCall(refreshToken: session.tokens.refreshToken, at: self.clock.now()))
            let outcome = state.script.isEmpty ? state.defaultOutcome : state.script.removeFirst()
            return (outcome, state.holding)
        }
        if hold {
            await withCheckedContinuation { continuation in
                let resumeNow = self.state.withLock { state in
                    guard state.holding else { return true }
                    state.held.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
        switch outcome {
        case .succeed:
            // Issued when the call completes, so a held refresh returns the newest tokens.
            var tokens = self.issue(now: self.clock.now(), refreshExpiresAt: session.tokens.refreshExpiresAt)
            if !self.state.withLock({ $0.rotatesRefreshTokens }) {
                tokens.refreshToken = nil
                tokens.refreshExpiresAt = nil
            }
            return RefreshedSession(tokens: tokens, providerData: nil)
        case .failTransiently:
            throw ProviderError.unavailable("the provider is down")
        case .reject:
            throw ProviderError.sessionRevoked("the session was revoked")
        case .refuseClient:
            throw ProviderError.misconfigured("the provider refused the client: invalid_client (bad secret)")
        case .refuse:
            throw ProviderError.rejected(
                refusal: "HTTP 400 invalid_request",
                message: "HTTP 400 invalid_request: There is no 'user' for this token"
            )
        }
    }

    func revoke(_ session: ProviderSession) async -> Bool {
        self.state.withLock { $0.revokedRefreshTokens.append(session.tokens.refreshToken) }
        return true
    }

    /// A new token pair; a refresh keeps the session's refresh expiry (absolute from login).
    private func issue(now: Timestamp, refreshExpiresAt: Timestamp?) -> TokenSet {
        self.state.withLock { state in
            state.issued += 1
            return TokenSet(
                accessToken: "access-\(state.issued)",
                issuedAt: now,
                expiresAt: now.adding(milliseconds: state.accessLifetimeMilliseconds),
                refreshToken: "refresh-\(state.issued)",
                refreshExpiresAt: refreshExpiresAt
                    ?? state.refreshLifetimeMilliseconds.map { now.adding(milliseconds: $0) }
            )
        }
    }
}

extension ScriptedProvider: ProfileReading {
    /// Sets the claims the provider gives from now on, as an administrator changing the account at the provider.
    func setClaims(_ claims: [String: JSONValue]?) {
        self.state.withLock { $0.claims = claims }
    }

    var profileReads: Int { self.state.withLock { $0.profileReads } }

    func readProfile(_ session: ProviderSession) async throws -> (profile: UserClaims?, customData: UserClaims?) {
        let claims = self.state.withLock { state in
            state.profileReads += 1
            return state.claims
        }
        guard let claims else { return (nil, nil) }
        return (UserClaims.profile(from: claims), UserClaims.customData(from: claims, names: ["groups"]))
    }
}
