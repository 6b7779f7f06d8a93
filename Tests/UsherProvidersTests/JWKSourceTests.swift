import Crypto
import CryptoExtras
import Foundation
import Logging
import Testing
import UsherCore
import UsherHTTP
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// Where the JOSE verifier gets its keys: fixed keys, key files, and JWK set URLs (cached, refetched for an unknown
/// `kid`, throttled, https only).
extension JOSETests {
    @Test func fixedKeysReportUnknownKid() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Self.verifier([key])
        #expect(
            await Self.rejection(verifier, try key.sign(Self.claims(), kid: "gone"))
                == .unknownKey("no key with kid \"gone\"")
        )
    }

    @Test func fileKeysAreReadLazilyAndAgainForAnUnknownKid() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let first = TestIssuerKey.p256(kid: "one")
        let second = try TestIssuerKey.rsa(kid: "two")
        let path = directory.file("jwks.json")
        let verifier = JWTVerifier(keys: .file(path: path), policy: Self.policy(), clock: ManualClock())

        // Nothing to read yet: unavailable, not unknown.
        guard case .keysUnavailable? = await Self.rejection(verifier, try first.sign(Self.claims())) else {
            Issue.record("a missing key file did not make the keys unavailable")
            return
        }
        try directory.write("jwks.json", TestJWT.keySet([first.publicJWK()]))
        #expect(await Self.rejection(verifier, try first.sign(Self.claims())) == nil)
        // Rotation: the file gains a key; a token with its kid makes the source read the file again.
        try directory.write("jwks.json", TestJWT.keySet([first.publicJWK(), second.publicJWK()]))
        #expect(await Self.rejection(verifier, try second.sign(Self.claims())) == nil)
        // A kid that is in no version of the file.
        #expect(
            await Self.rejection(verifier, try second.sign(Self.claims(), kid: "three"))
                == .unknownKey("no key with kid \"three\"")
        )
        // A file that turns bad keeps the keys read before.
        try directory.write("jwks.json", "garbage")
        #expect(await Self.rejection(verifier, try first.sign(Self.claims())) == nil)
        #expect(
            await Self.rejection(verifier, try second.sign(Self.claims(), kid: "four"))
                == .unknownKey("no key with kid \"four\"")
        )
    }

    @Test func setsWithOtherMembersAndOddKeysParse() throws {
        let json = """
            {"keys": [
              {"kty": "RSA", "kid": "a", "n": "AQAB", "e": "AQAB", "x5c": ["MIIC"], "x5t": "abc", "ext": true},
              {"kid": "no-kty"},
              "not an object",
              {"kty": "EC", "crv": "P-256", "kid": "b", "x": "eA", "y": "eQ", "key_ops": ["verify"]}
            ], "extra": 1}
            """
        let keys = try #require(JWKSSource.parseSet(Data(json.utf8)))
        #expect(keys.map(\.kid) == ["a", "b"])
        #expect(JWKSSource.parseSet(Data("[]".utf8)) == nil)
        #expect(JWKSSource.parseSet(Data(#"{"keys": 1}"#.utf8)) == nil)
    }

    @Test func urlsMustBeHTTPSUnlessOnLoopback() {
        #expect(JWKSSource.problem(withURL: "https://www.googleapis.com/oauth2/v3/certs") == nil)
        #expect(JWKSSource.problem(withURL: "http://127.0.0.1:8080/jwks.json") == nil)
        #expect(JWKSSource.problem(withURL: "http://127.1.2.3/jwks.json") == nil)
        #expect(JWKSSource.problem(withURL: "http://localhost/jwks.json") == nil)
        #expect(JWKSSource.problem(withURL: "http://[::1]:80/jwks.json") == nil)
        #expect(JWKSSource.problem(withURL: "http://auth.example.com/jwks.json") != nil)
        #expect(JWKSSource.problem(withURL: "http://127.0.0.1.evil.example/jwks.json") != nil)
        #expect(JWKSSource.problem(withURL: "ftp://example.com/jwks.json") != nil)
        #expect(JWKSSource.problem(withURL: "/etc/jwks.json") != nil)
    }

    /// A directory with `jwks.json` holding `keys`, served on loopback, and an HTTP client; both are stopped after
    /// `body`, whatever happens.
    static func withKeyServer<T>(
        _ keys: [TestIssuerKey],
        _ body: (TestDirectory, StaticHTTPServer, HTTPTransport) async throws -> T
    ) async throws -> T {
        let directory = try TestDirectory()
        defer { directory.remove() }
        try directory.write("jwks.json", TestJWT.keySet(keys.map { $0.publicJWK() }))
        let server = try StaticHTTPServer(directory: directory.path)
        let client = HTTPTransport()
        do {
            let result = try await body(directory, server, client)
            await server.stop()
            client.shutdown()
            return result
        } catch {
            await server.stop()
            client.shutdown()
            throw error
        }
    }

    static let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    // The sources' request timeout in these tests, 60 s, is a hang guard: a fetch from the loopback server that takes
    // longer on a loaded machine must not read as an unavailable key set. (The server that went away refuses the
    // connection at once, without waiting for it.)

    @Test func urlKeysAreCachedRefetchedForUnknownKidsAndServedWhenTheServerIsDown() async throws {
        let first = try TestIssuerKey.rsa(kid: "one")
        let second = TestIssuerKey.p256(kid: "two")
        let third = TestIssuerKey.p256(kid: "three")
        try await Self.withKeyServer([first]) { directory, server, client in
            let source = JWKSSource.url(
                server.url("jwks.json"),
                httpClient: client,
                timeout: .seconds(60),
                logger: Self.quietLogger,
                refetchInterval: .zero
            )
            let verifier = JWTVerifier(keys: source, policy: Self.policy(), clock: ManualClock())

            // Fetched on first use, then served from the cache.
            #expect(await Self.rejection(verifier, try first.sign(Self.claims())) == nil)
            #expect(await Self.rejection(verifier, try first.sign(Self.claims())) == nil)
            #expect(server.requests == ["/jwks.json"])

            // A rotation: an unknown kid makes it fetch again.
            try directory.write("jwks.json", TestJWT.keySet([first.publicJWK(), second.publicJWK()]))
            #expect(await Self.rejection(verifier, try second.sign(Self.claims())) == nil)
            #expect(server.requests.count == 2)

            // A kid the server does not have either: fetched again, then refused.
            #expect(
                await Self.rejection(verifier, try third.sign(Self.claims()))
                    == .unknownKey("no key with kid \"three\"")
            )
            #expect(server.requests.count == 3)

            // Concurrent logins with a new kid all get it.
            try directory.write(
                "jwks.json",
                TestJWT.keySet([first.publicJWK(), second.publicJWK(), third.publicJWK()])
            )
            let token = try third.sign(Self.claims())
            let rejections = await withTaskGroup(of: JWTError?.self) { group in
                for _ in 0..<8 { group.addTask { await Self.rejection(verifier, token) } }
                return await group.reduce(into: [JWTError?]()) { $0.append($1) }
            }
            #expect(rejections.count == 8 && rejections.allSatisfy { $0 == nil })

            // The server goes away: cached keys keep working; unknown kids are unknown, not unavailable.
            await server.stop()
            #expect(await Self.rejection(verifier, try first.sign(Self.claims())) == nil)
            #expect(
                await Self.rejection(verifier, try first.sign(Self.claims(), kid: "four"))
                    == .unknownKey("no key with kid \"four\"")
            )

            // A source that never fetched anything: unavailable.
            let cold = JWTVerifier(
                keys: .url(
                    server.url("jwks.json"),
                    httpClient: client,
                    timeout: .seconds(60),
                    logger: Self.quietLogger
                ),
                policy: Self.policy(),
                clock: ManualClock()
            )
            let error = await Self.rejection(cold, try first.sign(Self.claims()))
            guard case .keysUnavailable(let reason)? = error else {
                Issue.record("an unreachable JWK set URL: \(String(describing: error))")
                return
            }
            #expect(reason.contains(server.url("jwks.json")))
        }
    }

    @Test func urlRefetchesAreThrottled() async throws {
        let first = TestIssuerKey.p256(kid: "one")
        let second = TestIssuerKey.p256(kid: "two")
        try await Self.withKeyServer([first]) { directory, server, client in
            let verifier = JWTVerifier(
                keys: .url(
                    server.url("jwks.json"),
                    httpClient: client,
                    timeout: .seconds(60),
                    logger: Self.quietLogger
                ),
                policy: Self.policy(),
                clock: ManualClock()
            )
            #expect(await Self.rejection(verifier, try first.sign(Self.claims())) == nil)
            // Made-up kids: one refetch, then none for 30 s.
            for index in 0..<5 {
                let error = await Self.rejection(verifier, try first.sign(Self.claims(), kid: .some("bogus-\(index)")))
                #expect(error == .unknownKey("no key with kid \"bogus-\(index)\""))
            }
            // Even a real new key waits for the interval to pass.
            try directory.write("jwks.json", TestJWT.keySet([first.publicJWK(), second.publicJWK()]))
            #expect(
                await Self.rejection(verifier, try second.sign(Self.claims())) == .unknownKey("no key with kid \"two\"")
            )
            #expect(server.requests.count == 2)
        }
    }

    @Test func urlsThatAreNotHTTPSAreNeverFetched() async throws {
        let key = TestIssuerKey.p256(kid: "one")
        try await Self.withKeyServer([key]) { _, server, client in
            let verifier = JWTVerifier(
                keys: .url(
                    "http://auth.example.com:\(server.port)/jwks.json",
                    httpClient: client,
                    timeout: .seconds(60),
                    logger: Self.quietLogger
                ),
                policy: Self.policy(),
                clock: ManualClock()
            )
            let error = await Self.rejection(verifier, try key.sign(Self.claims()))
            guard case .keysUnavailable(let reason)? = error else {
                Issue.record("plain http to a remote host: \(String(describing: error))")
                return
            }
            #expect(reason.contains("https"))
            #expect(server.requests.isEmpty)
        }
    }
}
