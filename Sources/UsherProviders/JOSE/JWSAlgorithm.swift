import Crypto
import CryptoExtras
internal import JWTKit
import UsherCore
import UsherProtocol

/// The JWS algorithms (RFC 7518 §3) usher verifies: RSA with PKCS #1 v1.5 or PSS padding, and ECDSA on P-256 and
/// P-384.
///
/// There is deliberately no `none` and no HMAC: a verifier that knows only public keys must never be talked into
/// treating one as a shared secret (the "HS256 signed with the public key" confusion). This list, and the choice of
/// which key may verify which algorithm (`fits`), is usher's policy; the signature check itself is jwt-kit's.
enum JWSAlgorithm: String, CaseIterable, Sendable {
    case rs256 = "RS256"
    case rs384 = "RS384"
    case rs512 = "RS512"
    case ps256 = "PS256"
    case ps384 = "PS384"
    case ps512 = "PS512"
    case es256 = "ES256"
    case es384 = "ES384"

    /// RSA keys shorter than this are refused (RFC 7518 §3.3 requires 2048 bits). jwt-kit refuses them too
    /// (`Insecure.RSA.PublicKey` throws `keySizeTooSmall`); usher checks first so the rule does not depend on it.
    static let minimumRSAKeyBits = 2048

    /// Whether `key` may verify this algorithm: the right key type and curve, `alg` (when the key names one) equal to
    /// this algorithm, and `use` (when given) `sig`.
    func fits(_ key: UsherProtocol.JWK) -> Bool {
        if let alg = key.alg, alg != self.rawValue { return false }
        if let use = key.use, use != "sig" { return false }
        switch self {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: return key.kty == "RSA"
        case .es256: return key.kty == "EC" && key.crv == "P-256"
        case .es384: return key.kty == "EC" && key.crv == "P-384"
        }
    }

    /// A jwt-kit key collection holding only `key`, as this algorithm's verifier, or nil when the key cannot be used
    /// (missing or malformed members, an RSA key shorter than 2048 bits, a point not on the curve).
    ///
    /// The collection holds a single key, added without a key ID: it is the collection's default, so jwt-kit checks
    /// every token with exactly this key and this algorithm, whatever `kid` or `alg` the token's header names (those
    /// are checked by `JWTVerifier` before a key is chosen). One collection per key keeps jwt-kit's own key choice out
    /// of it: it falls back to its default key for an unknown `kid` and, for keys added as JWKs, lets the key's `alg`
    /// (or the header's) pick the algorithm.
    func verifier(for key: UsherProtocol.JWK) async -> JWTKeyCollection? {
        let collection = JWTKeyCollection()
        switch self {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512:
            guard let n = key.n.flatMap(Self.decodeKeyMember), let e = key.e.flatMap(Self.decodeKeyMember),
                let backing = try? _RSA.Signing.PublicKey(n: n, e: e),
                backing.keySizeInBits >= Self.minimumRSAKeyBits,
                let publicKey = try? Insecure.RSA.PublicKey(backing: backing)
            else { return nil }
            switch self {
            case .rs256: await collection.add(rsa: publicKey, digestAlgorithm: .sha256)
            case .rs384: await collection.add(rsa: publicKey, digestAlgorithm: .sha384)
            case .rs512: await collection.add(rsa: publicKey, digestAlgorithm: .sha512)
            // PSS with MGF1 and a salt as long as the digest, as RFC 7518 §3.5 specifies.
            case .ps256: await collection.add(pss: publicKey, digestAlgorithm: .sha256)
            case .ps384: await collection.add(pss: publicKey, digestAlgorithm: .sha384)
            default: await collection.add(pss: publicKey, digestAlgorithm: .sha512)
            }
        case .es256:
            guard let point = Self.ecPoint(key, coordinateBytes: 32),
                let backing = try? P256.Signing.PublicKey(rawRepresentation: point),
                let publicKey = try? ES256PublicKey(backing: backing)
            else { return nil }
            await collection.add(ecdsa: publicKey)
        case .es384:
            guard let point = Self.ecPoint(key, coordinateBytes: 48),
                let backing = try? P384.Signing.PublicKey(rawRepresentation: point),
                let publicKey = try? ES384PublicKey(backing: backing)
            else { return nil }
            await collection.add(ecdsa: publicKey)
        }
        return collection
    }

    /// `x || y` of an EC JWK, each coordinate exactly `coordinateBytes` long.
    private static func ecPoint(_ key: UsherProtocol.JWK, coordinateBytes: Int) -> [UInt8]? {
        guard let x = key.x.flatMap(Self.decodeKeyMember), let y = key.y.flatMap(Self.decodeKeyMember),
            x.count == coordinateBytes, y.count == coordinateBytes
        else { return nil }
        return x + y
    }

    /// A JWK member in base64url. Key sets are published by others: trailing `=` padding, which some publishers add,
    /// is tolerated here (never in tokens).
    private static func decodeKeyMember(_ text: String) -> [UInt8]? {
        var trimmed = Substring(text)
        while trimmed.hasSuffix("=") { trimmed = trimmed.dropLast() }
        return Base64URL.decode(trimmed)
    }
}
