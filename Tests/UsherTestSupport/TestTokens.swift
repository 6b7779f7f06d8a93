import Crypto
import CryptoExtras
import Foundation
import UsherProtocol

/// A signing key made in the test, standing in for an outside issuer (an app's auth service, Google, Apple).
///
/// It mints compact JWS tokens with any header, so tests can also make the tokens an attacker would: `alg: none`,
/// HMAC with the public key, a `kid` the issuer never published.
///
/// Sendable: elliptic-curve keys are kept as their raw bytes (swift-crypto 3 does not mark its EC key types
/// Sendable) and rebuilt for each signature.
package struct TestIssuerKey: Sendable {
    package enum Material: Sendable {
        case rsa(_RSA.Signing.PrivateKey)
        /// The raw representation of a P-256 private key.
        case p256(Data)
        /// The raw representation of a P-384 private key.
        case p384(Data)
    }

    package let material: Material
    package let kid: String

    package init(material: Material, kid: String) {
        self.material = material
        self.kid = kid
    }

    /// A fresh 2048-bit RSA key (RS256/384/512, PS256/384/512).
    package static func rsa(kid: String) throws -> TestIssuerKey {
        TestIssuerKey(material: .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048)), kid: kid)
    }

    /// A fresh P-256 key (ES256).
    package static func p256(kid: String) -> TestIssuerKey {
        TestIssuerKey(material: .p256(P256.Signing.PrivateKey().rawRepresentation), kid: kid)
    }

    /// A fresh P-384 key (ES384).
    package static func p384(kid: String) -> TestIssuerKey {
        TestIssuerKey(material: .p384(P384.Signing.PrivateKey().rawRepresentation), kid: kid)
    }

    /// The algorithm this key signs with unless told otherwise.
    package var defaultAlgorithm: String {
        switch self.material {
        case .rsa: "RS256"
        case .p256: "ES256"
        case .p384: "ES384"
        }
    }

    /// The public key as a JWK object, with `kid`, `use` and (unless nil) `alg`.
    package func publicJWK(alg: String? = nil, kid: String? = nil) -> [String: JSONValue] {
        var jwk: [String: JSONValue] = ["kid": .string(kid ?? self.kid), "use": "sig"]
        if let alg { jwk["alg"] = .string(alg) }
        switch self.material {
        case .rsa(let key):
            let primitives = try! key.publicKey.getKeyPrimitives()
            jwk["kty"] = "RSA"
            jwk["n"] = .string(TestJWT.base64URL(primitives.modulus))
            jwk["e"] = .string(TestJWT.base64URL(primitives.publicExponent))
        case .p256(let key):
            let raw = [UInt8](try! P256.Signing.PrivateKey(rawRepresentation: key).publicKey.rawRepresentation)
            jwk["kty"] = "EC"
            jwk["crv"] = "P-256"
            jwk["x"] = .string(TestJWT.base64URL(raw.prefix(32)))
            jwk["y"] = .string(TestJWT.base64URL(raw.suffix(32)))
        case .p384(let key):
            let raw = [UInt8](try! P384.Signing.PrivateKey(rawRepresentation: key).publicKey.rawRepresentation)
            jwk["kty"] = "EC"
            jwk["crv"] = "P-384"
            jwk["x"] = .string(TestJWT.base64URL(raw.prefix(48)))
            jwk["y"] = .string(TestJWT.base64URL(raw.suffix(48)))
        }
        return jwk
    }

    /// The public key in PEM, as an attacker would use it for an HMAC key-confusion token.
    package var publicPEM: String {
        switch self.material {
        case .rsa(let key): key.publicKey.pemRepresentation
        case .p256(let key): try! P256.Signing.PrivateKey(rawRepresentation: key).publicKey.pemRepresentation
        case .p384(let key): try! P384.Signing.PrivateKey(rawRepresentation: key).publicKey.pemRepresentation
        }
    }

    /// A token signed with this key.
    ///
    /// - Parameters:
    ///   - alg: the header's `alg` and the signing algorithm (default: `defaultAlgorithm`).
    ///   - kid: the header's `kid`; `.some(nil)` leaves it out; nil uses this key's.
    package func sign(
        _ claims: [String: JSONValue],
        alg: String? = nil,
        kid: String?? = nil,
        extraHeader: [String: JSONValue] = [:]
    ) throws -> String {
        let alg = alg ?? self.defaultAlgorithm
        var header: [String: JSONValue] = ["alg": .string(alg), "typ": "JWT"]
        if let kid = kid ?? self.kid { header["kid"] = .string(kid) }
        header.merge(extraHeader) { _, new in new }
        let input = TestJWT.signingInput(header: header, claims: claims)
        return input + "." + TestJWT.base64URL(try self.signature(over: input, alg: alg))
    }

    /// The signature of `input` (the JWS signing input) with `alg` (default: `defaultAlgorithm`).
    package func signature(over input: String, alg: String? = nil) throws -> [UInt8] {
        let alg = alg ?? self.defaultAlgorithm
        let data = Array(input.utf8)
        let signature: [UInt8]
        switch (self.material, alg) {
        case (.rsa(let key), "RS256"):
            signature = Array(
                try key.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
            )
        case (.rsa(let key), "RS384"):
            signature = Array(
                try key.signature(for: SHA384.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
            )
        case (.rsa(let key), "RS512"):
            signature = Array(
                try key.signature(for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
            )
        case (.rsa(let key), "PS256"):
            signature = Array(try key.signature(for: SHA256.hash(data: data), padding: .PSS).rawRepresentation)
        case (.rsa(let key), "PS384"):
            signature = Array(try key.signature(for: SHA384.hash(data: data), padding: .PSS).rawRepresentation)
        case (.rsa(let key), "PS512"):
            signature = Array(try key.signature(for: SHA512.hash(data: data), padding: .PSS).rawRepresentation)
        case (.p256(let key), _):
            signature = Array(
                try P256.Signing.PrivateKey(rawRepresentation: key).signature(for: data).rawRepresentation
            )
        case (.p384(let key), _):
            signature = Array(
                try P384.Signing.PrivateKey(rawRepresentation: key).signature(for: data).rawRepresentation
            )
        default:
            throw TestSupportError("a test RSA key cannot sign \(alg)")
        }
        return signature
    }
}

/// Raw JWT building blocks for tests.
package enum TestJWT {
    package static func base64URL<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    package static func json(_ value: [String: JSONValue]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try! encoder.encode(JSONValue.object(value)), as: UTF8.self)
    }

    /// `base64url(header) "." base64url(claims)`.
    package static func signingInput(header: [String: JSONValue], claims: [String: JSONValue]) -> String {
        self.base64URL(Array(self.json(header).utf8)) + "." + self.base64URL(Array(self.json(claims).utf8))
    }

    /// An unsecured token (`alg: none`, empty signature), which no verifier may accept.
    package static func unsigned(_ claims: [String: JSONValue], kid: String? = nil) -> String {
        var header: [String: JSONValue] = ["alg": "none", "typ": "JWT"]
        if let kid { header["kid"] = .string(kid) }
        return self.signingInput(header: header, claims: claims) + "."
    }

    /// An HS256 token whose HMAC key is `secret`: with a public key as the secret, the classic key-confusion attack.
    package static func hs256(_ claims: [String: JSONValue], secret: [UInt8], kid: String?) -> String {
        var header: [String: JSONValue] = ["alg": "HS256", "typ": "JWT"]
        if let kid { header["kid"] = .string(kid) }
        let input = self.signingInput(header: header, claims: claims)
        let mac = HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: SymmetricKey(data: secret))
        return input + "." + self.base64URL(Array(mac))
    }

    /// A JWK set document.
    package static func keySet(_ keys: [[String: JSONValue]]) -> String {
        self.json(["keys": .array(keys.map { .object($0) })])
    }
}
