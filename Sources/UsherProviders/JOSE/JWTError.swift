/// Why a JWT was not accepted.
///
/// Descriptions say which check failed and never contain the token. Values that come from the token itself (an
/// algorithm name, a key ID) are shortened and stripped of control characters before they are kept here, so an
/// error can be logged and shown to the client as it is.
package enum JWTError: Error, Equatable, CustomStringConvertible {
    /// Not a compact JWS of three base64url parts with JSON header and claims (the reason says what is wrong).
    case malformed(String)
    /// The header's `alg` is not supported (`none`, any HMAC), not allowed by the policy, or does not fit the key.
    case unsupportedAlgorithm(String)
    /// No key with the token's `kid` (or, without a `kid`, no key at all), even after fetching the keys again.
    case unknownKey(String)
    /// The signature does not verify with the key.
    case badSignature
    /// `iss` is not the configured issuer.
    case wrongIssuer
    /// `aud` names none of the configured audiences.
    case wrongAudience
    /// `exp` has passed (beyond the leeway).
    case expired
    /// `nbf` has not come yet (beyond the leeway).
    case notYetValid
    /// `iat` lies in the future (beyond the leeway).
    case issuedInFuture
    /// The `nonce` claim is not the nonce the client passed.
    case nonceMismatch
    /// A required claim is absent.
    case missingClaim(String)
    /// The keys cannot be loaded and none are cached (JWKS URL unreachable, file unreadable): try again later.
    case keysUnavailable(String)

    package var description: String {
        switch self {
        case .malformed(let reason): "malformed token: \(reason)"
        case .unsupportedAlgorithm(let reason): "unsupported algorithm: \(reason)"
        case .unknownKey(let reason): "unknown key: \(reason)"
        case .badSignature: "the signature does not verify"
        case .wrongIssuer: "the issuer (iss) is not the configured one"
        case .wrongAudience: "the audience (aud) does not name this service"
        case .expired: "the token has expired (exp)"
        case .notYetValid: "the token is not valid yet (nbf)"
        case .issuedInFuture: "the token was issued in the future (iat)"
        case .nonceMismatch: "the nonce does not match"
        case .missingClaim(let claim): "the token has no \(claim) claim"
        case .keysUnavailable(let reason): "the signing keys are unavailable: \(reason)"
        }
    }

    /// `value` from an untrusted token, made safe to show: at most 64 printable ASCII characters.
    static func quoted(_ value: String) -> String {
        let printable = value.unicodeScalars.prefix(64).map { scalar -> Character in
            scalar.isASCII && scalar.value >= 0x20 && scalar.value < 0x7F && scalar != "\"" ? Character(scalar) : "?"
        }
        return "\"" + String(printable) + (value.unicodeScalars.count > 64 ? "…" : "") + "\""
    }
}
