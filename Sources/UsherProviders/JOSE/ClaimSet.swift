internal import JWTKit
import UsherProtocol

/// A JWT's claims as jwt-kit signs and verifies them: any JSON object, kept as `JSONValue`s.
///
/// jwt-kit checks claims in `verify(using:)`; this payload checks none, because usher's policy for them (issuer,
/// audience, lifetimes with leeway, nonce) is `JWTVerifier.check`, and the local provider's tokens are checked by
/// their callers.
struct ClaimSet: JWTPayload {
    var claims: [String: JSONValue]

    init(_ claims: [String: JSONValue]) { self.claims = claims }

    init(from decoder: any Decoder) throws {
        self.claims = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.claims)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// What jwt-kit made of a token checked with one key.
    enum Outcome {
        /// The signature verified and the claims are a JSON object.
        case verified([String: JSONValue])
        /// The signature does not verify with this key (or the key cannot check it).
        case badSignature
        /// The signature verified but the claims are not a base64url-encoded JSON object.
        case malformedClaims
    }

    /// Has jwt-kit verify `token`'s signature with the only key in `keys`, then decode its claims.
    static func verify(_ token: String, with keys: JWTKeyCollection) async -> Outcome {
        do {
            return .verified(try await keys.verify(token, as: ClaimSet.self).claims)
        } catch let error as JWTKit.JWTError where error.errorType == .malformedToken {
            // jwt-kit decodes the claims only after the signature verified.
            return .malformedClaims
        } catch {
            // `signatureVerificationFailed`, or a signature the key's type cannot even parse (an ECDSA signature of
            // the wrong length): either way this key did not sign the token.
            return .badSignature
        }
    }
}
