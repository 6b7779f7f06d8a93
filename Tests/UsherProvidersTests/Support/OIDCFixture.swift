import Foundation
import Logging
import Synchronization
import UsherCore
import UsherHTTP
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// A scripted OpenID provider (discovery, JWK set, token, userinfo, revocation and device endpoints on a
/// `ScriptedHTTPServer`), the HTTP client and background work an `OIDCProvider` needs, and the log it writes.
final class OIDCFixture: Sendable {
    let server: ScriptedHTTPServer
    let key = TestIssuerKey.p256(kid: "key-1")
    let client: HTTPTransport
    let background = BackgroundWork()
    let clock: any SessionClock
    let logs = LogRecorder()

    var issuer: String { self.server.base }

    private init(server: ScriptedHTTPServer, client: HTTPTransport, clock: any SessionClock) {
        self.server = server
        self.client = client
        self.clock = clock
    }

    /// Runs `body` with a fixture whose discovery and JWK set are served; stops everything afterwards.
    static func with<T: Sendable>(
        clock: (any SessionClock)? = nil,
        _ body: @Sendable (OIDCFixture) async throws -> T
    ) async throws -> T {
        let fixture = OIDCFixture(
            server: try ScriptedHTTPServer(),
            client: HTTPTransport(),
            clock: clock ?? SystemClock()
        )
        fixture.serveDiscovery()
        let outcome: Result<T, any Error> = await withTaskGroup(of: Void.self) { group in
            group.addTask { await fixture.background.run() }
            defer { group.cancelAll() }
            do {
                return .success(try await body(fixture))
            } catch {
                return .failure(error)
            }
        }
        fixture.server.stop()
        fixture.client.shutdown()
        return try outcome.get()
    }

    /// The discovery document, with `changes` applied (`.null` removes a member).
    func discoveryDocument(_ changes: [String: JSONValue] = [:]) -> String {
        var document: [String: JSONValue] = [
            "issuer": .string(self.issuer),
            "authorization_endpoint": .string(self.issuer + "/authorize"),
            "token_endpoint": .string(self.issuer + "/token"),
            "userinfo_endpoint": .string(self.issuer + "/userinfo"),
            "jwks_uri": .string(self.issuer + "/jwks"),
            "revocation_endpoint": .string(self.issuer + "/revoke"),
            "device_authorization_endpoint": .string(self.issuer + "/device"),
            "id_token_signing_alg_values_supported": ["ES256", "HS256"],
            "code_challenge_methods_supported": ["S256"],
        ]
        for (key, value) in changes {
            document[key] = value == .null ? nil : value
        }
        return TestJWT.json(document)
    }

    func serveDiscovery(_ changes: [String: JSONValue] = [:]) {
        let document = self.discoveryDocument(changes)
        self.server.handle("/.well-known/openid-configuration") { _ in .json(200, document) }
        let keys = TestJWT.keySet([self.key.publicJWK()])
        self.server.handle("/jwks") { _ in .json(200, keys) }
    }

    func provider(
        clientSecret: String? = "s3cret/+",
        authentication: OIDCProviderConfiguration.ClientAuthentication? = nil,
        scopes: [String] = ["openid", "email", "profile"],
        redirectURI: String = "http://127.0.0.1:0/callback",
        timeoutMilliseconds: Int64 = 2000,
        issuer: String? = nil,
        grantTypes: Set<String>? = nil,
        prompt: String? = nil
    ) -> OIDCProvider {
        var configuration = OIDCProviderConfiguration(
            issuer: issuer ?? self.issuer,
            clientID: "usher",
            clientSecret: clientSecret,
            scopes: scopes,
            redirectURI: redirectURI,
            clientAuthentication: authentication,
            requestTimeoutMilliseconds: timeoutMilliseconds,
            grantTypes: grantTypes
        )
        configuration.prompt = prompt
        return OIDCProvider(
            name: "corp",
            configuration: configuration,
            httpClient: self.client,
            clock: self.clock,
            background: self.background,
            logger: self.logs.logger
        )
    }

    /// Makes the token endpoint answer each code in the returned table with an ID token that carries the code's nonce
    /// (the test files the code with the nonce of the login it completes); any other code is `invalid_grant`.
    func answerCodesWithIDTokens() -> Locked<[String: String]> {
        let issued = Locked<[String: String]>([:])
        self.server.handle("/token") { request in
            guard let nonce = issued.withLock({ $0[request.form["code"] ?? ""] }),
                let idToken = try? self.idToken(nonce: nonce)
            else { return .json(400, #"{"error":"invalid_grant"}"#) }
            return OIDCFixture.tokens(idToken: idToken)
        }
        return issued
    }

    /// An ID token for `subject`, signed with the fixture's key, with `changes` applied (`.null` removes a claim).
    func idToken(
        subject: String = "user-1",
        nonce: String? = nil,
        _ changes: [String: JSONValue] = [:]
    ) throws
        -> String
    {
        let now = self.clock.now().millisecondsSinceEpoch / 1000
        var claims: [String: JSONValue] = [
            "iss": .string(self.issuer), "sub": .string(subject), "aud": "usher", "iat": .int(now),
            "exp": .int(now + 300), "email": "ada@example.com", "email_verified": true,
            "name": "Ada Lovelace",
        ]
        if let nonce { claims["nonce"] = .string(nonce) }
        for (key, value) in changes {
            claims[key] = value == .null ? nil : value
        }
        return try self.key.sign(claims)
    }

    /// A token endpoint answer.
    static func tokens(
        access: String = "access-1",
        refresh: String? = "refresh-1",
        expiresIn: Int = 120,
        idToken: String? = nil,
        extra: [String: JSONValue] = [:]
    ) -> ScriptedHTTPServer.Reply {
        var body: [String: JSONValue] = [
            "access_token": .string(access), "token_type": "Bearer", "expires_in": .int(Int64(expiresIn)),
        ]
        if let refresh { body["refresh_token"] = .string(refresh) }
        if let idToken { body["id_token"] = .string(idToken) }
        body.merge(extra) { _, new in new }
        return .json(200, TestJWT.json(body))
    }
}

/// A value shared with request handlers (which escape, so a `Mutex` itself cannot be captured).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { self.mutex = Mutex(value) }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        self.mutex.withLock { body(&$0) }
    }
}

/// A loopback port where nothing listens, and nothing else can start listening while it is held: bound, never
/// listened on, so connections to it are refused. (A port freed by a stopped server could be taken by another test
/// running at the same time.)
final class RefusingPort: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        (self.descriptor, self.port) = try bindLoopbackSocket(listenBacklog: nil)
    }

    var base: String { "http://127.0.0.1:\(self.port)" }

    deinit { close(self.descriptor) }
}
