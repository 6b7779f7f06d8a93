import Crypto
import CryptoExtras
import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// Where jwt-kit alone would decide differently from usher's policy: jwt-kit checks signatures, and these tests pin
/// that what it would let through on its own (`crit`, an `alg` other than the key's, a `kid` it does not hold,
/// `none`, HMAC, a signature of the wrong shape) still never verifies.
@Suite(.timeLimit(.minutes(2)))
struct JOSEJWTKitEdgeTests {
    typealias Base = JOSETests

    @Test func algNoneIsRefusedWhateverThePolicyOrSignature() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Base.verifier([key], policy: Base.policy(algorithms: ["none"]))
        // With an empty signature (RFC 7519 §6.1) and with a signature copied from a genuine token.
        let genuine = try key.sign(Base.claims()).split(separator: ".")
        for token in [
            TestJWT.unsigned(Base.claims(), kid: "ec"), TestJWT.unsigned(Base.claims(), kid: "ec") + genuine[2],
            TestJWT.unsigned(Base.claims()) + genuine[2],
        ] {
            guard case .unsupportedAlgorithm? = await Base.rejection(verifier, token) else {
                Issue.record("alg none was not refused as unsupported")
                continue
            }
        }
    }

    @Test func hmacIsUnsupportedEvenWhenThePolicyListsOnlyHMAC() async throws {
        let key = try TestIssuerKey.rsa(kid: "rsa")
        let verifier = try Base.verifier([key], policy: Base.policy(algorithms: ["HS256"]))
        let token = TestJWT.hs256(Base.claims(), secret: Array(key.publicPEM.utf8), kid: nil)
        #expect(await Base.rejection(verifier, token) == .unsupportedAlgorithm("\"HS256\" is not supported"))
    }

    @Test func everyCritIsRefusedEvenAnEmptyOne() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Base.verifier([key])
        for crit: JSONValue in [[], ["b64"], ["exp"], "exp", .null] {
            let token = try key.sign(Base.claims(), extraHeader: ["crit": crit])
            #expect(
                await Base.rejection(verifier, token) == .malformed("the header has crit extensions"),
                "crit \(crit)"
            )
        }
    }

    @Test func aKidNamingAnotherKeyOfTheSameTypeDoesNotVerify() async throws {
        // jwt-kit falls back to its default key for a kid it does not hold; usher gives it only the named key.
        let signing = try TestIssuerKey.rsa(kid: "a")
        let other = try TestIssuerKey.rsa(kid: "b")
        let verifier = try Base.verifier([signing, other])
        #expect(try await verifier.verify(try signing.sign(Base.claims()))["sub"] == "user-1")
        #expect(await Base.rejection(verifier, try signing.sign(Base.claims(), kid: "b")) == .badSignature)
        let ec = TestIssuerKey.p256(kid: "x")
        let ecOther = TestIssuerKey.p256(kid: "y")
        let ecVerifier = try Base.verifier([ec, ecOther])
        #expect(await Base.rejection(ecVerifier, try ec.sign(Base.claims(), kid: "y")) == .badSignature)
    }

    @Test func theHeadersAlgIsTheAlgorithmChecked() async throws {
        // A PKCS #1 v1.5 signature under a PS256 header, and the reverse: the same RSA key, the wrong padding.
        let key = try TestIssuerKey.rsa(kid: "rsa")
        let verifier = try Base.verifier([key], policy: Base.policy(algorithms: ["RS256", "PS256", "RS384"]))
        for (signedAs, claimedAs) in [("RS256", "PS256"), ("PS256", "RS256"), ("RS256", "RS384")] {
            let header: [String: JSONValue] = ["alg": .string(claimedAs), "typ": "JWT", "kid": "rsa"]
            let input = TestJWT.signingInput(header: header, claims: Base.claims())
            let token = input + "." + TestJWT.base64URL(try key.signature(over: input, alg: signedAs))
            #expect(await Base.rejection(verifier, token) == .badSignature, "\(signedAs) as \(claimedAs)")
        }
    }

    @Test func ecdsaSignaturesMustBeRawAndOfTheCurvesLength() async throws {
        let key = TestIssuerKey.p256(kid: "ec")
        let verifier = try Base.verifier([key])
        let token = try key.sign(Base.claims())
        let parts = token.split(separator: ".").map(String.init)
        let raw = try #require(Base64URL.decode(parts[2]))
        let der = Array(try P256.Signing.ECDSASignature(rawRepresentation: raw).derRepresentation)
        for signature in [der, Array(raw.prefix(63)), raw + [0], Array(raw.prefix(32))] {
            let forged = "\(parts[0]).\(parts[1]).\(TestJWT.base64URL(signature))"
            #expect(await Base.rejection(verifier, forged) == .badSignature, "\(signature.count) bytes")
        }
        // ES384 is a P-384 key's: a P-256 signature under an ES384 header is an algorithm mismatch.
        let es384 = try Base.verifier([key], policy: Base.policy(algorithms: ["ES256", "ES384"]))
        guard case .unsupportedAlgorithm? = await Base.rejection(es384, try key.sign(Base.claims(), alg: "ES384"))
        else {
            Issue.record("ES384 against a P-256 key was not refused")
            return
        }
    }

    @Test func rsaKeysOf2048BitsAndMoreVerify() async throws {
        for bits in [2048, 3072] {
            let key = TestIssuerKey(
                material: .rsa(try _RSA.Signing.PrivateKey(keySize: .init(bitCount: bits))),
                kid: "rsa-\(bits)"
            )
            let verifier = try Base.verifier([key], policy: Base.policy(algorithms: ["RS256", "PS512"]))
            #expect(try await verifier.verify(try key.sign(Base.claims()))["sub"] == "user-1")
            #expect(try await verifier.verify(try key.sign(Base.claims(), alg: "PS512"))["sub"] == "user-1")
        }
        // Below 2048 bits nothing verifies, whichever algorithm (jwt-kit would refuse such a key too).
        let weak = TestIssuerKey(
            material: .rsa(try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1536))),
            kid: "weak"
        )
        let verifier = try Base.verifier([weak], policy: Base.policy(algorithms: ["RS256", "PS256"]))
        #expect(await Base.rejection(verifier, try weak.sign(Base.claims())) == .badSignature)
        #expect(await Base.rejection(verifier, try weak.sign(Base.claims(), alg: "PS256")) == .badSignature)
    }

    @Test func encryptionKeysNeverVerify() async throws {
        // jwt-kit's JWK has no `use`: usher's key set keeps it and refuses a key published for encryption.
        let key = try TestIssuerKey.rsa(kid: "rsa")
        var member = key.publicJWK()
        member["use"] = "enc"
        let jwk = try #require(JWKSSource.parseSet(Data(TestJWT.keySet([member]).utf8))?.first)
        let verifier = JWTVerifier(keys: .fixed([jwk]), policy: Base.policy(), clock: ManualClock())
        guard case .unsupportedAlgorithm? = await Base.rejection(verifier, try key.sign(Base.claims())) else {
            Issue.record("a key with use enc verified a token")
            return
        }
    }

    @Test func aSetWithKeysJWTKitCannotDecodeStillServesTheOthers() throws {
        // One `oct` key or an unknown `alg` makes jwt-kit's JWKS decoding fail as a whole; usher skips only it.
        let rsa = try TestIssuerKey.rsa(kid: "rsa")
        let json = TestJWT.keySet([
            ["kty": "oct", "kid": "secret", "k": "c2VjcmV0"], rsa.publicJWK(),
            ["kty": "RSA", "kid": "enc", "use": "enc", "alg": "RSA-OAEP-256", "n": "AQAB", "e": "AQAB"],
        ])
        let keys = try #require(JWKSSource.parseSet(Data(json.utf8)))
        #expect(keys.map(\.kid) == ["secret", "rsa", "enc"])
        #expect(keys.filter(JWSAlgorithm.rs256.fits).map(\.kid) == ["rsa"])
    }
}
