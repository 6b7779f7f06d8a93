import Crypto
import CryptoExtras
import Foundation
import Logging
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// The JOSE verifier: every way a token can be wrong, with keys made in the test.
@Suite(.timeLimit(.minutes(2)))
struct JOSETests {
    static let issuer = "https://auth.example.com"
    static let audience = "usher"
    /// `ManualClock`'s starting time, in seconds.
    static let now: Int64 = 1_800_000_000

    static func claims(_ changes: [String: JSONValue] = [:]) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": .string(Self.issuer), "aud": .string(Self.audience), "sub": "user-1", "iat": .int(Self.now - 10),
            "exp": .int(Self.now + 300),
        ]
        for (key, value) in changes {
            if value == .null { claims.removeValue(forKey: key) } else { claims[key] = value }
        }
        return claims
    }

    static func policy(
        algorithms: Set<String> = ["RS256", "ES256"],
        leeway: Int64 = 60,
        requireIssuedAt: Bool = false
    ) -> JWTValidationPolicy {
        JWTValidationPolicy(
            issuer: Self.issuer,
            audiences: [Self.audience, "other-app"],
            algorithms: algorithms,
            leewaySeconds: leeway,
            requireIssuedAt: requireIssuedAt
        )
    }

    static func jwk(_ key: TestIssuerKey, alg: String? = nil) throws -> JWK {
        let data = Data(TestJWT.keySet([key.publicJWK(alg: alg)]).utf8)
        return try #require(JWKSSource.parseSet(data)?.first)
    }

    static func verifier(
        _ keys: [TestIssuerKey],
        policy: JWTValidationPolicy = Self.policy(),
        clock: ManualClock = ManualClock()
    ) throws -> JWTVerifier {
        JWTVerifier(keys: .fixed(try keys.map { try Self.jwk($0) }), policy: policy, clock: clock)
    }

    /// The error `verify` throws, or nil when it accepts.
    static func rejection(
        _ verifier: JWTVerifier,
        _ token: String,
        nonce: String? = nil
    ) async -> JWTError? {
        do {
            _ = try await verifier.verify(token, nonce: nonce)
            return nil
        } catch {
            #expect(!error.description.contains(token), "the error shows the token")
            return error
        }
    }

    // MARK: Accepted tokens

    @Test(arguments: ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"])
    func rsaAlgorithms(_ algorithm: String) async throws {
        let key = try TestIssuerKey.rsa(kid: "rsa")
        let verifier = try Self.verifier([key], policy: Self.policy(algorithms: [algorithm]))
        let claims = try await verifier.verify(try key.sign(Self.claims(), alg: algorithm))
        #expect(claims["sub"] == "user-1")
    }

    @Test func ecdsaAlgorithms() async throws {
        let p256 = TestIssuerKey.p256(kid: "p256")
        let p384 = TestIssuerKey.p384(kid: "p384")
        let verifier = try Self.verifier([p256, p384], policy: Self.policy(algorithms: ["ES256", "ES384"]))
        #expect(try await verifier.verify(try p256.sign(Self.claims()))["sub"] == "user-1")
        #expect(try await verifier.verify(try p384.sign(Self.claims()))["sub"] == "user-1")
    }

    @Test func audienceMayBeAnArrayAndTokensWithoutKidTryEveryKey() async throws {
        let rsa = try TestIssuerKey.rsa(kid: "rsa")
        let ec = TestIssuerKey.p256(kid: "ec")
        let verifier = try Self.verifier([rsa, ec])
        let token = try ec.sign(Self.claims(["aud": ["someone-else", "other-app"]]), kid: .some(nil))
        #expect(try await verifier.verify(token)["aud"] == ["someone-else", "other-app"])
    }

    @Test func leewayCoversSmallClockSkew() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Self.verifier([key], policy: Self.policy(leeway: 60))
        // Expired 30 s ago, valid from 30 s from now, issued 30 s from now: all within a minute of skew.
        let skewed = Self.claims(["exp": .int(Self.now - 30), "nbf": .int(Self.now + 30), "iat": .int(Self.now + 30)])
        #expect(try await verifier.verify(try key.sign(skewed))["sub"] == "user-1")
        // Fractional NumericDates are allowed too.
        #expect(try await verifier.verify(try key.sign(Self.claims(["exp": .double(Double(Self.now) + 0.5)]))) != [:])
    }

    // MARK: Signature and algorithm

    @Test func wrongSignatureIsRejected() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let impostor = TestIssuerKey.p256(kid: "ec")
        let verifier = try Self.verifier([key])
        #expect(await Self.rejection(verifier, try impostor.sign(Self.claims())) == .badSignature)

        // A valid signature over other claims.
        let genuine = try key.sign(Self.claims()).split(separator: ".")
        let forged = TestJWT.signingInput(
            header: ["alg": "ES256", "typ": "JWT", "kid": "ec"],
            claims: Self.claims(["sub": "admin"])
        ).split(separator: ".")
        #expect(await Self.rejection(verifier, "\(genuine[0]).\(forged[1]).\(genuine[2])") == .badSignature)

        let rsa = try TestIssuerKey.rsa(kid: "rsa")
        let otherRSA = try TestIssuerKey.rsa(kid: "rsa")
        #expect(await Self.rejection(try Self.verifier([rsa]), try otherRSA.sign(Self.claims())) == .badSignature)
    }

    @Test func algNoneIsRejected() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        // Even a policy that lists it cannot make it acceptable.
        let verifier = try Self.verifier([key], policy: Self.policy(algorithms: ["ES256", "none"]))
        let error = await Self.rejection(verifier, TestJWT.unsigned(Self.claims(), kid: "ec"))
        guard case .unsupportedAlgorithm? = error else {
            Issue.record("alg none: \(String(describing: error))")
            return
        }
    }

    @Test func hmacWithThePublicKeyIsRejected() async throws {
        let key = try TestIssuerKey.rsa(kid: "rsa")
        let verifier = try Self.verifier([key], policy: Self.policy(algorithms: ["RS256", "HS256"]))
        for secret in [key.publicPEM, TestJWT.json(key.publicJWK()), try #require(key.publicJWK()["n"]?.stringValue)] {
            let token = TestJWT.hs256(Self.claims(), secret: Array(secret.utf8), kid: "rsa")
            let error = await Self.rejection(verifier, token)
            guard case .unsupportedAlgorithm? = error else {
                Issue.record("HS256: \(String(describing: error))")
                continue
            }
        }
    }

    @Test func algorithmMustBeAllowedAndFitTheKey() async throws {
        let rsa = try TestIssuerKey.rsa(kid: "rsa")
        let ec = TestIssuerKey.p256(kid: "ec")
        // Not in the policy.
        let strict = try Self.verifier([rsa], policy: Self.policy(algorithms: ["ES256"]))
        #expect(
            await Self.rejection(strict, try rsa.sign(Self.claims()))
                == .unsupportedAlgorithm("RS256 is not allowed here")
        )
        // ES256 in the header, but the kid names an RSA key.
        let both = try Self.verifier([rsa, ec])
        let mismatched = try ec.sign(Self.claims(), kid: "rsa")
        guard case .unsupportedAlgorithm? = await Self.rejection(both, mismatched) else {
            Issue.record("ES256 against an RSA key was not refused as an algorithm mismatch")
            return
        }
        // The key says it is for PS256 only: an RS256 token may not use it.
        let pinned = JWTVerifier(
            keys: .fixed([try Self.jwk(rsa, alg: "PS256")]),
            policy: Self.policy(algorithms: ["RS256", "PS256"]),
            clock: ManualClock()
        )
        guard case .unsupportedAlgorithm? = await Self.rejection(pinned, try rsa.sign(Self.claims(), alg: "RS256"))
        else {
            Issue.record("RS256 with a PS256 key was not refused")
            return
        }
        #expect(try await pinned.verify(try rsa.sign(Self.claims(), alg: "PS256"))["sub"] == "user-1")
    }

    @Test func rsaKeysShorterThan2048BitsVerifyNothing() async throws {
        let weak = TestIssuerKey(
            material: .rsa(try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))),
            kid: "weak"
        )
        #expect(await Self.rejection(try Self.verifier([weak]), try weak.sign(Self.claims())) == .badSignature)
    }

    // MARK: Claims

    @Test func wrongIssuerIsRejected() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Self.verifier([key])
        #expect(
            await Self.rejection(verifier, try key.sign(Self.claims(["iss": "https://evil.example"]))) == .wrongIssuer
        )
        #expect(await Self.rejection(verifier, try key.sign(Self.claims(["iss": .null]))) == .missingClaim("iss"))
    }

    @Test func wrongAudienceIsRejected() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Self.verifier([key])
        #expect(await Self.rejection(verifier, try key.sign(Self.claims(["aud": "another-service"]))) == .wrongAudience)
        #expect(await Self.rejection(verifier, try key.sign(Self.claims(["aud": ["a", "b"]]))) == .wrongAudience)
        #expect(await Self.rejection(verifier, try key.sign(Self.claims(["aud": 42]))) == .wrongAudience)
        #expect(await Self.rejection(verifier, try key.sign(Self.claims(["aud": .null]))) == .missingClaim("aud"))
    }

    @Test func expiredIsRejected() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let clock = ManualClock()
        let verifier = try Self.verifier([key], policy: Self.policy(leeway: 60), clock: clock)
        let token = try key.sign(Self.claims(["exp": .int(Self.now + 10)]))
        #expect(try await verifier.verify(token)["sub"] == "user-1")
        // Valid strictly before exp + leeway.
        clock.advance(bySeconds: 69)
        #expect(await Self.rejection(verifier, token) == nil)
        clock.advance(bySeconds: 1)
        #expect(await Self.rejection(verifier, token) == .expired)
        #expect(await Self.rejection(verifier, try key.sign(Self.claims(["exp": .null]))) == .missingClaim("exp"))
        #expect(
            await Self.rejection(verifier, try key.sign(Self.claims(["exp": "tomorrow"])))
                == .malformed("exp is not a number")
        )
    }

    @Test func notYetValidIsRejected() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Self.verifier([key], policy: Self.policy(leeway: 5))
        #expect(await Self.rejection(verifier, try key.sign(Self.claims(["nbf": .int(Self.now + 6)]))) == .notYetValid)
        #expect(await Self.rejection(verifier, try key.sign(Self.claims(["nbf": .int(Self.now + 5)]))) == nil)
    }

    @Test func issuedInTheFutureIsRejected() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Self.verifier([key], policy: Self.policy(leeway: 5))
        #expect(
            await Self.rejection(verifier, try key.sign(Self.claims(["iat": .int(Self.now + 3600)]))) == .issuedInFuture
        )
        let requiring = try Self.verifier([key], policy: Self.policy(requireIssuedAt: true))
        #expect(await Self.rejection(requiring, try key.sign(Self.claims(["iat": .null]))) == .missingClaim("iat"))
        #expect(await Self.rejection(verifier, try key.sign(Self.claims(["iat": .null]))) == nil)
    }

    @Test func nonceMustMatchWhenGiven() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Self.verifier([key])
        let token = try key.sign(Self.claims(["nonce": "n-123"]))
        #expect(await Self.rejection(verifier, token, nonce: "n-123") == nil)
        #expect(await Self.rejection(verifier, token, nonce: "n-456") == .nonceMismatch)
        #expect(await Self.rejection(verifier, try key.sign(Self.claims()), nonce: "n-123") == .missingClaim("nonce"))
        // Without a nonce to compare, the claim is not looked at.
        #expect(await Self.rejection(verifier, token) == nil)
    }

    @Test func malformedTokensAreRejected() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Self.verifier([key])
        let good = try key.sign(Self.claims()).split(separator: ".").map(String.init)
        let cases: [String] = [
            "",
            "onlyonepart",
            "\(good[0]).\(good[1])",
            "\(good[0]).\(good[1]).\(good[2]).extra",
            "!!!.\(good[1]).\(good[2])",
            "\(TestJWT.base64URL(Array("not json".utf8))).\(good[1]).\(good[2])",
            "\(TestJWT.base64URL(Array("[1]".utf8))).\(good[1]).\(good[2])",
            "\(good[0]).\(good[1]).",
            "\(good[0]).\(good[1]).\(good[2])=",
            String(repeating: "a", count: JWTVerifier.maximumTokenBytes + 1),
        ]
        for token in cases {
            guard case .malformed? = await Self.rejection(verifier, token) else {
                Issue.record("not refused as malformed: \(token.prefix(80))")
                continue
            }
        }
        // A signed token whose claims are not a JSON object.
        let notAnObject =
            TestJWT.signingInput(header: ["alg": "ES256", "kid": "ec"], claims: [:])
            .split(separator: ".")[0] + "." + TestJWT.base64URL(Array("\"just a string\"".utf8))
        let signature = try key.signature(over: String(notAnObject))
        guard case .malformed? = await Self.rejection(verifier, notAnObject + "." + TestJWT.base64URL(signature)) else {
            Issue.record("claims that are not an object were not refused as malformed")
            return
        }
        // Critical header extensions are never ignored.
        let critical = try key.sign(Self.claims(), extraHeader: ["crit": ["exp"]])
        #expect(await Self.rejection(verifier, critical) == .malformed("the header has crit extensions"))
    }

    @Test func descriptionsNeverContainTheToken() async throws {
        let key = try TestIssuerKey.rsa(kid: "rsa")
        let verifier = try Self.verifier([key])
        let tokens = [
            try key.sign(Self.claims(["iss": "x"])), try key.sign(Self.claims(), kid: "who-knows"),
            try TestIssuerKey.rsa(kid: "rsa").sign(Self.claims()), TestJWT.unsigned(Self.claims()),
        ]
        for token in tokens {
            let error = try #require(await Self.rejection(verifier, token))
            for part in token.split(separator: ".") where part.count > 8 {
                #expect(!error.description.contains(part))
            }
        }
        // A hostile kid is shortened and stripped of control characters.
        let hostile = String(repeating: "k\n", count: 100)
        let error = await Self.rejection(verifier, try key.sign(Self.claims(), kid: .some(hostile)))
        guard case .unknownKey(let message)? = error else {
            Issue.record("hostile kid: \(String(describing: error))")
            return
        }
        #expect(!message.contains("\n") && message.count < 120)
    }
}
