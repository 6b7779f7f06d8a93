import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a verifier requires of a token besides a good signature.
package struct JWTValidationPolicy: Sendable, Hashable {
    /// The only accepted `iss`.
    package var issuer: String
    /// `aud` (a string or an array) must name at least one of these.
    package var audiences: [String]
    /// The accepted `alg` values; only names in `JWTVerifier.supportedAlgorithms` can ever verify.
    package var algorithms: Set<String>
    /// How far `exp`, `nbf` and `iat` may be off, for clock skew between the issuer and this device.
    package var leewaySeconds: Int64 = 60
    /// Whether a token without `iat` is refused.
    package var requireIssuedAt = false

    package init(
        issuer: String,
        audiences: [String],
        algorithms: Set<String>,
        leewaySeconds: Int64 = 60,
        requireIssuedAt: Bool = false
    ) {
        self.issuer = issuer
        self.audiences = audiences
        self.algorithms = algorithms
        self.leewaySeconds = leewaySeconds
        self.requireIssuedAt = requireIssuedAt
    }
}

/// Verifies JWTs (compact JWS, RFC 7515/7519) that another party signed: the signature with a key from a
/// `JWKSSource`, then `iss`, `aud`, `exp`, `nbf`, `iat` and optionally `nonce`.
///
/// The algorithm must be one of `supportedAlgorithms`, allowed by the policy, and fit the key it is checked with
/// (key type, curve, and the key's own `alg` when it has one). Claims are looked at only after the signature
/// verified, so a forged token learns nothing about the policy.
///
/// jwt-kit (vapor/jwt-kit) checks the signature and decodes the claims; everything before and after it is usher's
/// policy, because jwt-kit on its own ignores `crit`, falls back to its default key for a `kid` it does not hold, and
/// checks no claim the way this policy wants (leeway, `aud` as any of several, `nonce`).
package struct JWTVerifier: Sendable {
    /// RS256/384/512, PS256/384/512, ES256, ES384. Never `none`, never HMAC.
    ///
    /// jwt-kit could verify `none` and HMAC tokens too if such a key were added; `JWSAlgorithm.verifier(for:)` never
    /// adds one, and this list is checked before jwt-kit sees the token.
    package static let supportedAlgorithms: Set<String> = Set(JWSAlgorithm.allCases.map(\.rawValue))

    /// Longer tokens are refused before any parsing (ID tokens are one or two kilobytes).
    package static let maximumTokenBytes = 64 * 1024

    package let keys: JWKSSource
    package let policy: JWTValidationPolicy
    private let clock: any SessionClock

    package init(keys: JWKSSource, policy: JWTValidationPolicy, clock: any SessionClock) {
        self.keys = keys
        self.policy = policy
        self.clock = clock
    }

    /// Returns the claims of `token` once every check passed.
    ///
    /// - Parameters:
    ///   - nonce: when given, the token's `nonce` claim must equal it.
    /// - Throws: `JWTError`, naming the check that failed.
    package func verify(_ token: String, nonce: String? = nil) async throws(JWTError) -> [String: JSONValue] {
        guard token.utf8.count <= Self.maximumTokenBytes else {
            throw .malformed("longer than \(Self.maximumTokenBytes) bytes")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("not three dot-separated parts") }
        guard let headerBytes = Base64URL.decode(parts[0]), let header = Self.object(headerBytes) else {
            throw .malformed("the header is not base64url-encoded JSON")
        }
        guard let algorithmName = header["alg"]?.stringValue else { throw .malformed("the header has no alg") }
        guard let algorithm = JWSAlgorithm(rawValue: algorithmName) else {
            throw .unsupportedAlgorithm("\(JWTError.quoted(algorithmName)) is not supported")
        }
        guard self.policy.algorithms.contains(algorithmName) else {
            throw .unsupportedAlgorithm("\(algorithmName) is not allowed here")
        }
        // Extensions this verifier does not understand must not be ignored (RFC 7515 §4.1.11).
        guard header["crit"] == nil else { throw .malformed("the header has crit extensions") }
        let keyID: String?
        switch header["kid"] {
        case nil, .null?: keyID = nil
        case .string(let value)?: keyID = value
        default: throw .malformed("the header's kid is not a string")
        }
        guard let signature = Base64URL.decode(parts[2]), !signature.isEmpty else {
            throw .malformed("the signature is missing or not base64url")
        }

        let candidates = try await self.keys.keys(withID: keyID)
        let fitting = candidates.filter(algorithm.fits)
        guard !fitting.isEmpty else {
            throw .unsupportedAlgorithm(
                keyID.map { "\(algorithmName) does not fit the key \(JWTError.quoted($0))" }
                    ?? "no key is for \(algorithmName)"
            )
        }
        // jwt-kit checks the signature with each fitting key in turn (a token without a kid may match any of them),
        // then decodes the claims of the first that verifies.
        var verified: [String: JSONValue]?
        for key in fitting {
            guard let verifier = await algorithm.verifier(for: key) else { continue }
            switch await ClaimSet.verify(token, with: verifier) {
            case .verified(let claims):
                verified = claims
            case .badSignature:
                continue
            case .malformedClaims:
                throw .malformed("the claims are not base64url-encoded JSON")
            }
            break
        }
        guard let claims = verified else { throw .badSignature }
        // The claims were decoded by jwt-kit only after the signature verified; usher's own strict base64url rule
        // applies to them as to the header.
        guard Base64URL.decode(parts[1]) != nil else {
            throw .malformed("the claims are not base64url-encoded JSON")
        }
        try self.check(claims, nonce: nonce)
        return claims
    }

    private func check(_ claims: [String: JSONValue], nonce: String?) throws(JWTError) {
        switch claims["iss"] {
        case nil: throw .missingClaim("iss")
        case .string(self.policy.issuer)?: break
        default: throw .wrongIssuer
        }
        let audiences: [String]
        switch claims["aud"] {
        case nil:
            throw .missingClaim("aud")
        case .string(let audience)?:
            audiences = [audience]
        case .array(let values)?:
            audiences = values.compactMap(\.stringValue)
        default:
            throw .wrongAudience
        }
        guard audiences.contains(where: self.policy.audiences.contains) else { throw .wrongAudience }

        let now = self.clock.now().millisecondsSinceEpoch
        let leeway = self.policy.leewaySeconds * 1000
        guard let expiresAt = try Self.numericDate(claims, "exp") else { throw .missingClaim("exp") }
        // The token is valid strictly before exp (RFC 7519 §4.1.4).
        guard now < expiresAt.addingClamped(leeway) else { throw .expired }
        if let notBefore = try Self.numericDate(claims, "nbf"), now.addingClamped(leeway) < notBefore {
            throw .notYetValid
        }
        switch try Self.numericDate(claims, "iat") {
        case nil where self.policy.requireIssuedAt: throw .missingClaim("iat")
        case let issuedAt? where issuedAt > now.addingClamped(leeway): throw .issuedInFuture
        default: break
        }
        if let nonce {
            switch claims["nonce"] {
            case nil: throw .missingClaim("nonce")
            case .string(let value)? where value == nonce: break
            default: throw .nonceMismatch
            }
        }
    }

    /// A NumericDate claim (seconds since the epoch, possibly fractional) in milliseconds, or nil when absent.
    private static func numericDate(_ claims: [String: JSONValue], _ name: String) throws(JWTError) -> Int64? {
        switch claims[name] {
        case nil:
            return nil
        case .int(let seconds)?:
            let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
            return overflow ? (seconds < 0 ? .min : .max) : milliseconds
        case .double(let seconds)? where seconds.isFinite:
            let milliseconds = (seconds * 1000).rounded(.down)
            if milliseconds >= 9.2e18 { return .max }
            if milliseconds <= -9.2e18 { return .min }
            return Int64(milliseconds)
        default:
            throw .malformed("\(name) is not a number")
        }
    }

    private static func object(_ bytes: [UInt8]) -> [String: JSONValue]? {
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            return nil
        }
        return object
    }
}

extension Int64 {
    fileprivate func addingClamped(_ other: Int64) -> Int64 {
        let (sum, overflow) = self.addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
