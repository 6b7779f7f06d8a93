import Crypto
import Foundation
import Testing
import UsherCore
import UsherProtocol

/// The session key's proofs (RFC 9449 section 4.2): signed with the key whose JWK the header carries, with the claims
/// asked for, a new `jti` each time, and `ath` the SHA-256 of the token.
@Suite("DPoP key")
struct DPoPKeyTests {
    static func part(_ jwt: String, _ index: Int) throws -> [String: JSONValue] {
        try JSONDecoder().decode([String: JSONValue].self, from: try #require(Self.bytes(jwt, index)))
    }

    static func bytes(_ jwt: String, _ index: Int) -> Data? {
        var text = String(jwt.split(separator: ".")[index])
        text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text)
    }

    static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test func aProofIsSignedByTheKeyItsHeaderNames() async throws {
        let key = DPoPKey.generate()
        let proof = try await key.proof(
            method: "POST",
            url: "https://api.example.com/items",
            nonce: "n-42",
            accessToken: "the-token",
            issuedAt: Timestamp(millisecondsSinceEpoch: 1_800_000_000_500)
        )
        let header = try Self.part(proof, 0)
        #expect(header["typ"] == "dpop+jwt")
        #expect(header["alg"] == "ES256")
        let jwk = try #require(header["jwk"]?.objectValue)
        #expect(jwk["d"] == nil)
        let x = try #require(jwk["x"]?.stringValue.flatMap { Self.bytes("\($0).", 0) })
        let y = try #require(jwk["y"]?.stringValue.flatMap { Self.bytes("\($0).", 0) })
        let publicKey = try P256.Signing.PublicKey(rawRepresentation: x + y)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Self.bytes(proof, 2)))
        let input = proof.split(separator: ".").prefix(2).joined(separator: ".")
        #expect(publicKey.isValidSignature(signature, for: Data(input.utf8)))

        let claims = try Self.part(proof, 1)
        #expect(claims["htm"] == "POST")
        #expect(claims["htu"] == "https://api.example.com/items")
        #expect(claims["nonce"] == "n-42")
        #expect(claims["iat"] == .int(1_800_000_000))
        #expect(claims["ath"]?.stringValue == Self.base64URL(SHA256.hash(data: Data("the-token".utf8))))

        // RFC 7638: the thumbprint is over the required members in order, computed here independently.
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(jwk["x"]!.stringValue!)","y":"\#(jwk["y"]!.stringValue!)"}"#
        #expect(key.thumbprint == Self.base64URL(SHA256.hash(data: Data(canonical.utf8))))
    }

    /// Header and claims are written as usher writes JSON (`JWTSigning`): sorted keys, and the URL's slashes as they
    /// are, so that the proof carries `htu` byte for byte as the request's URL.
    @Test func aProofIsWrittenWithSortedKeysAndUnescapedSlashes() async throws {
        let proof = try await DPoPKey.generate().proof(
            method: "GET",
            url: "https://api.example.com/v1/items",
            nonce: "n-1",
            accessToken: "the-token",
            issuedAt: Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        )
        let header = String(decoding: try #require(Self.bytes(proof, 0)), as: UTF8.self)
        let claims = String(decoding: try #require(Self.bytes(proof, 1)), as: UTF8.self)
        #expect(header.hasPrefix(#"{"alg":"ES256","jwk":{"crv":"P-256","kty":"EC","x":"#))
        #expect(header.hasSuffix(#""},"typ":"dpop+jwt"}"#))
        #expect(claims.hasPrefix(#"{"ath":""#))
        #expect(claims.contains(#","htm":"GET","htu":"https://api.example.com/v1/items","iat":1800000000,"jti":""#))
        #expect(claims.hasSuffix(#"","nonce":"n-1"}"#))
    }

    @Test func everyProofHasItsOwnJTIAndATokenRequestHasNoATH() async throws {
        let key = DPoPKey.generate()
        let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        let first = try Self.part(
            try await key.proof(method: "POST", url: "https://t/", nonce: nil, accessToken: nil, issuedAt: now),
            1
        )
        let second = try Self.part(
            try await key.proof(method: "POST", url: "https://t/", nonce: nil, accessToken: nil, issuedAt: now),
            1
        )
        #expect(first["jti"] != nil && first["jti"] != second["jti"])
        #expect(first["ath"] == nil && first["nonce"] == nil)
    }

    @Test func theStoredFormReadsBackAsTheSameKeyAndNothingElseDoes() {
        let key = DPoPKey.generate()
        #expect(DPoPKey(stored: key.stored) == key)
        #expect(DPoPKey(stored: key.stored)?.thumbprint == key.thumbprint)
        #expect(DPoPKey.generate() != key)
        for damaged in [
            "", "not base64!", String(key.stored.dropLast()), key.stored + "AA", String(repeating: "A", count: 43),
        ] {
            #expect(DPoPKey(stored: damaged) == nil, "\(damaged)")
        }
    }
}
