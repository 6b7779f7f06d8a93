import Crypto

/// Unpadded base64url (RFC 4648 §5), the encoding JOSE uses for every binary field: the one implementation in usher.
///
/// Decoding is strict, so that each byte string has exactly one accepted encoding: padding, whitespace, characters
/// outside the URL-safe alphabet, impossible lengths (4k+1 characters) and non-zero trailing bits are all rejected.
/// The token packing needs that (a lenient decoder would accept texts that pack to the same bytes as another) and so
/// do the JWT checks. Usher's own because the packing runs for every token at start-up, and FoundationEssentials'
/// `Data(base64Encoded:)` takes neither the URL alphabet nor unpadded input.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in Self.alphabet.enumerated() { values[Int(character)] = UInt8(index) }
        return values
    }()

    /// Encodes `bytes` as base64url without padding.
    package static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        let input = Array(bytes)
        var text: [UInt8] = []
        text.reserveCapacity((input.count * 4 + 2) / 3)
        Self.encode(input[...], into: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Decodes unpadded base64url, or returns nil if `string` is not exactly such an encoding.
    package static func decode(_ string: some StringProtocol) -> [UInt8]? {
        var bytes: [UInt8] = []
        let text = Array(string.utf8)
        bytes.reserveCapacity(text.count * 3 / 4)
        let decoded = text.withUnsafeBufferPointer { Self.decode($0, into: &bytes) }
        return decoded ? bytes : nil
    }

    /// Appends the bytes `text` encodes; false (having appended garbage the caller drops) when a character is outside
    /// the alphabet, the length is one no byte string encodes to, or the last character carries bits that encoding
    /// would not set.
    package static func decode(_ text: UnsafeBufferPointer<UInt8>, into bytes: inout [UInt8]) -> Bool {
        // A single leftover character carries only 6 bits: not a whole byte.
        guard text.count % 4 != 1 else { return false }
        return Self.values.withUnsafeBufferPointer { values in
            var accumulator: UInt32 = 0
            var bits: UInt32 = 0
            for character in text {
                let value = values[Int(character)]
                guard value != 0xFF else { return false }
                accumulator = (accumulator << 6) | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    bytes.append(UInt8(truncatingIfNeeded: accumulator >> bits))
                    accumulator &= (1 << bits) - 1
                }
            }
            // Leftover bits must be zero, or the text is not the canonical encoding of any bytes.
            return accumulator == 0
        }
    }

    /// Appends the encoding of `bytes` to `text`.
    package static func encode(_ bytes: ArraySlice<UInt8>, into text: inout [UInt8]) {
        Self.alphabet.withUnsafeBufferPointer { alphabet in
            var accumulator: UInt32 = 0
            var bits: UInt32 = 0
            for byte in bytes {
                accumulator = (accumulator << 8) | UInt32(byte)
                bits += 8
                while bits >= 6 {
                    bits -= 6
                    text.append(alphabet[Int((accumulator >> bits) & 0x3F)])
                }
                accumulator &= (1 << bits) - 1
            }
            if bits > 0 {
                text.append(alphabet[Int((accumulator << (6 - bits)) & 0x3F)])
            }
        }
    }
}

/// RFC 7638 JWK thumbprints: the one place usher computes them (the local provider's key ID, a DPoP key's `jkt`).
package enum JWKThumbprint {
    /// The thumbprint of a P-256 public key given by its coordinates in base64url: SHA-256 over the key's required
    /// members in lexicographic order, without whitespace, in base64url.
    package static func p256(x: String, y: String) -> String {
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        return Base64URL.encode(SHA256.hash(data: Array(canonical.utf8)))
    }
}
