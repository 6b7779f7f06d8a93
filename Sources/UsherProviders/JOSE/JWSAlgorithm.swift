import Crypto
import UsherProtocol
import _CryptoExtras

/// The JWS algorithms (RFC 7518 §3) usher verifies: RSA with PKCS #1 v1.5 or PSS padding, and ECDSA on P-256 and
/// P-384.
///
/// There is deliberately no `none` and no HMAC: a verifier that knows only public keys must never be talked into
/// treating one as a shared secret (the "HS256 signed with the public key" confusion).
enum JWSAlgorithm: String, CaseIterable, Sendable {
    case rs256 = "RS256"
    case rs384 = "RS384"
    case rs512 = "RS512"
    case ps256 = "PS256"
    case ps384 = "PS384"
    case ps512 = "PS512"
    case es256 = "ES256"
    case es384 = "ES384"

    /// RSA keys shorter than this are refused (RFC 7518 §3.3 requires 2048 bits).
    static let minimumRSAKeyBits = 2048

    /// Whether `key` may verify this algorithm: the right key type and curve, `alg` (when the key names one) equal to
    /// this algorithm, and `use` (when given) `sig`.
    func fits(_ key: JWK) -> Bool {
        if let alg = key.alg, alg != self.rawValue { return false }
        if let use = key.use, use != "sig" { return false }
        switch self {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: return key.kty == "RSA"
        case .es256: return key.kty == "EC" && key.crv == "P-256"
        case .es384: return key.kty == "EC" && key.crv == "P-384"
        }
    }

    /// Whether `signature` is this algorithm's signature of `signingInput` with `key`. A key that cannot be used
    /// (missing or malformed members, RSA shorter than 2048 bits) verifies nothing.
    func isValidSignature(_ signature: [UInt8], of signingInput: [UInt8], with key: JWK) -> Bool {
        switch self {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512:
            guard let n = key.n.flatMap(Self.decodeKeyMember), let e = key.e.flatMap(Self.decodeKeyMember),
                let publicKey = try? _RSA.Signing.PublicKey(n: n, e: e),
                publicKey.keySizeInBits >= Self.minimumRSAKeyBits
            else { return false }
            let rsaSignature = _RSA.Signing.RSASignature(rawRepresentation: signature)
            switch self {
            case .rs256:
                return publicKey.isValidSignature(
                    rsaSignature,
                    for: SHA256.hash(data: signingInput),
                    padding: .insecurePKCS1v1_5
                )
            case .rs384:
                return publicKey.isValidSignature(
                    rsaSignature,
                    for: SHA384.hash(data: signingInput),
                    padding: .insecurePKCS1v1_5
                )
            case .rs512:
                return publicKey.isValidSignature(
                    rsaSignature,
                    for: SHA512.hash(data: signingInput),
                    padding: .insecurePKCS1v1_5
                )
            // PSS with MGF1 and a salt as long as the digest, as RFC 7518 §3.5 specifies.
            case .ps256:
                return publicKey.isValidSignature(rsaSignature, for: SHA256.hash(data: signingInput), padding: .PSS)
            case .ps384:
                return publicKey.isValidSignature(rsaSignature, for: SHA384.hash(data: signingInput), padding: .PSS)
            default:
                return publicKey.isValidSignature(rsaSignature, for: SHA512.hash(data: signingInput), padding: .PSS)
            }
        case .es256:
            guard let point = Self.ecPoint(key, coordinateBytes: 32),
                let publicKey = try? P256.Signing.PublicKey(rawRepresentation: point),
                let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
            else { return false }
            return publicKey.isValidSignature(ecdsa, for: signingInput)
        case .es384:
            guard let point = Self.ecPoint(key, coordinateBytes: 48),
                let publicKey = try? P384.Signing.PublicKey(rawRepresentation: point),
                let ecdsa = try? P384.Signing.ECDSASignature(rawRepresentation: signature)
            else { return false }
            return publicKey.isValidSignature(ecdsa, for: signingInput)
        }
    }

    /// `x || y` of an EC JWK, each coordinate exactly `coordinateBytes` long.
    private static func ecPoint(_ key: JWK, coordinateBytes: Int) -> [UInt8]? {
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
