import Crypto
internal import JWTKit
import UsherProtocol

/// A session's DPoP key (RFC 9449): the P-256 key pair the session's tokens are bound to, made by the daemon when the
/// session opens and kept only inside it.
///
/// Programs never see the private key: they ask the daemon for a proof (`dpop_proof`), which `proof(...)` signs with
/// jwt-kit, as the local provider's tokens are signed (`TokenSigner`). The
/// key is part of the session's `TokenSet`, so it is stored (sealed like the tokens) in the same transaction as the
/// session, survives its refreshes, and is gone with it at logout.
///
/// The private key never appears in a description, a mirror or an error.
package struct DPoPKey: Sendable, Hashable {
    /// The key's parts, behind one reference: a `TokenSet` without a key (every bearer session) then pays one
    /// pointer-sized field for it, not the size of four arrays and strings.
    private final class Parts: Sendable {
        let key: P256.Signing.PrivateKey
        /// The private key's 32-byte scalar.
        let scalar: [UInt8]
        let x: String
        let y: String
        let thumbprint: String

        init(key: P256.Signing.PrivateKey, x: String, y: String, thumbprint: String) {
            self.key = key
            self.scalar = [UInt8](key.rawRepresentation)
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
        let x = Base64URL.encode(coordinates[0..<32])
        let y = Base64URL.encode(coordinates[32..<64])
        self.parts = Parts(key: key, x: x, y: y, thumbprint: JWKThumbprint.p256(x: x, y: y))
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
    package var stored: String { Base64URL.encode(self.parts.scalar) }

    /// The key the store kept, or nil when `stored` is not one.
    package init?(stored: String) {
        guard let bytes = Base64URL.decode(stored), bytes.count == 32,
            let key = try? P256.Signing.PrivateKey(rawRepresentation: bytes)
        else {
            return nil
        }
        self.init(key: key)
    }

    /// A DPoP proof JWT (RFC 9449 section 4.2) for one HTTP request, signed with this key by jwt-kit.
    ///
    /// - Parameters:
    ///   - method: `htm`, the request's HTTP method.
    ///   - url: `htu`, the request's URI without query and fragment.
    ///   - nonce: the `DPoP-Nonce` the server gave, if any.
    ///   - accessToken: the token the request carries (a resource request), for `ath`; nil for a token request.
    ///   - issuedAt: `iat`.
    /// - Throws: what jwt-kit throws when it cannot sign (it does not, for a P-256 key swift-crypto made).
    package func proof(
        method: String,
        url: String,
        nonce: String?,
        accessToken: String?,
        issuedAt: Timestamp
    ) async throws -> String {
        var jti = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in jti.indices { jti[index] = UInt8.random(in: 0...255, using: &generator) }
        let claims = ProofClaims(
            jti: Base64URL.encode(jti),
            htm: method,
            htu: url,
            iat: issuedAt.secondsSinceEpoch,
            nonce: nonce,
            ath: accessToken.map { Base64URL.encode(SHA256.hash(data: Array($0.utf8))) }
        )
        var header = JWTHeader()
        header.typ = "dpop+jwt"
        header.jwk = ["kty": .string("EC"), "crv": .string("P-256"), "x": .string(self.x), "y": .string(self.y)]
        let keys = await JWTSigning.keys(try ES256PrivateKey(backing: self.parts.key))
        return try await keys.sign(claims, header: header)
    }

    /// A proof's claims (RFC 9449 section 4.2); `nonce` and `ath` are left out when nil.
    private struct ProofClaims: JWTPayload {
        var jti: String
        var htm: String
        var htu: String
        var iat: Int64
        var nonce: String?
        var ath: String?

        /// Proofs are made here, not checked: the server that receives one checks it.
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}

extension DPoPKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package var description: String { "DPoPKey(ES256, jkt: \(self.thumbprint))" }
    package var debugDescription: String { self.description }
    /// Hides the private key from `dump` and `Mirror`.
    package var customMirror: Mirror { Mirror(self, children: ["thumbprint": self.thumbprint], displayStyle: .struct) }
}
