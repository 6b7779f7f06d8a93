import Crypto
import UsherProtocol

/// A session's DPoP key (RFC 9449): the P-256 key pair the session's tokens are bound to, made by the daemon when the
/// session opens and kept only inside it.
///
/// Programs never see the private key: they ask the daemon for a proof (`dpop_proof`), which `proof(...)` signs. The
/// key is part of the session's `TokenSet`, so it is stored (sealed like the tokens) in the same transaction as the
/// session, survives its refreshes, and is gone with it at logout.
///
/// The private key never appears in a description, a mirror or an error.
package struct DPoPKey: Sendable, Hashable {
    /// The key's parts, behind one reference: a `TokenSet` without a key (every bearer session) then pays one
    /// pointer-sized field for it, not the size of four arrays and strings.
    private final class Parts: Sendable {
        /// The private key's 32-byte scalar.
        let scalar: [UInt8]
        let x: String
        let y: String
        let thumbprint: String

        init(scalar: [UInt8], x: String, y: String, thumbprint: String) {
            self.scalar = scalar
            self.x = x
            self.y = y
            self.thumbprint = thumbprint
        }
    }

    private let parts: Parts

    /// The public key's coordinates, base64url.
    package var x: String { self.parts.x }
    package var y: String { self.parts.y }
    /// The RFC 7638 JWK thumbprint of the public key, base64url: the `cnf.jkt` of tokens bound to this key.
    package var thumbprint: String { self.parts.thumbprint }

    private init(key: P256.Signing.PrivateKey) {
        let coordinates = [UInt8](key.publicKey.rawRepresentation)
        let x = DPoPKey.base64URL(coordinates[0..<32])
        let y = DPoPKey.base64URL(coordinates[32..<64])
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        self.parts = Parts(
            scalar: [UInt8](key.rawRepresentation),
            x: x,
            y: y,
            thumbprint: DPoPKey.base64URL(ArraySlice(SHA256.hash(data: Array(canonical.utf8))))
        )
    }

    /// Keys are equal when their private keys are (the rest derives from it).
    package static func == (lhs: DPoPKey, rhs: DPoPKey) -> Bool {
        lhs.parts === rhs.parts || lhs.parts.scalar == rhs.parts.scalar
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(self.parts.scalar)
    }

    /// A new random key.
    package static func generate() -> DPoPKey {
        DPoPKey(key: P256.Signing.PrivateKey())
    }

    /// The key as the store keeps it (sealed, where a token key is configured): the scalar in base64url.
    package var stored: String { Self.base64URL(self.parts.scalar[...]) }

    /// The key the store kept, or nil when `stored` is not one.
    package init?(stored: String) {
        var bytes: [UInt8] = []
        let text = Array(stored.utf8)
        let decoded = text.withUnsafeBufferPointer { Base64URLPacking.decode($0, into: &bytes) }
        guard decoded, bytes.count == 32, let key = try? P256.Signing.PrivateKey(rawRepresentation: bytes) else {
            return nil
        }
        self.init(key: key)
    }

    /// The public key as a JWK (`kty`, `crv`, `x`, `y`), as a proof's header carries it.
    package var publicJWK: [String: JSONValue] {
        ["kty": .string("EC"), "crv": .string("P-256"), "x": .string(self.x), "y": .string(self.y)]
    }

    /// A DPoP proof JWT (RFC 9449 section 4.2) for one HTTP request, signed with this key.
    ///
    /// - Parameters:
    ///   - method: `htm`, the request's HTTP method.
    ///   - url: `htu`, the request's URI without query and fragment.
    ///   - nonce: the `DPoP-Nonce` the server gave, if any.
    ///   - accessToken: the token the request carries (a resource request), for `ath`; nil for a token request.
    ///   - issuedAt: `iat`.
    package func proof(
        method: String,
        url: String,
        nonce: String?,
        accessToken: String?,
        issuedAt: Timestamp
    )
        -> String
    {
        let header: [String: JSONValue] = [
            "typ": .string("dpop+jwt"), "alg": .string("ES256"), "jwk": .object(self.publicJWK),
        ]
        var jti = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in jti.indices { jti[index] = UInt8.random(in: 0...255, using: &generator) }
        var claims: [String: JSONValue] = [
            "jti": .string(Self.base64URL(jti[...])), "htm": .string(method), "htu": .string(url),
            "iat": .int(issuedAt.secondsSinceEpoch),
        ]
        if let nonce { claims["nonce"] = .string(nonce) }
        if let accessToken {
            claims["ath"] = .string(Self.base64URL(ArraySlice(SHA256.hash(data: Array(accessToken.utf8)))))
        }
        let input =
            Self.base64URL(ArraySlice(UserClaims(header).json.utf8)) + "."
            + Self.base64URL(ArraySlice(UserClaims(claims).json.utf8))
        // The scalar came from a valid key (`init(key:)`), so it always makes one again; signing P-256 cannot fail.
        let key = try! P256.Signing.PrivateKey(rawRepresentation: self.parts.scalar)
        let signature = try! key.signature(for: Array(input.utf8))
        return input + "." + Self.base64URL(ArraySlice(signature.rawRepresentation))
    }

    private static func base64URL(_ bytes: ArraySlice<UInt8>) -> String {
        var text: [UInt8] = []
        Base64URLPacking.encode(bytes, into: &text)
        return String(decoding: text, as: UTF8.self)
    }
}

extension DPoPKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package var description: String { "DPoPKey(ES256, jkt: \(self.thumbprint))" }
    package var debugDescription: String { self.description }
    /// Hides the private key from `dump` and `Mirror`.
    package var customMirror: Mirror { Mirror(self, children: ["thumbprint": self.thumbprint], displayStyle: .struct) }
}
