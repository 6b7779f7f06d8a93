import Crypto
import UsherCore

/// Random bytes and tokens from the operating system's CSPRNG, plus the digests used to store tokens.
package enum SecureRandom {
    /// Returns `count` bytes from the system CSPRNG (`getrandom(2)` on Linux).
    package static func bytes(count: Int) -> [UInt8] {
        precondition(count >= 0, "byte count must not be negative")
        // SystemRandomNumberGenerator is documented as cryptographically secure on every platform Swift supports.
        var generator = SystemRandomNumberGenerator()
        var result: [UInt8] = []
        result.reserveCapacity(count + 7)
        while result.count < count {
            withUnsafeBytes(of: generator.next() as UInt64) { result.append(contentsOf: $0) }
        }
        result.removeLast(result.count - count)
        return result
    }

    /// Returns a fresh unguessable token: `byteCount` random bytes encoded as base64url.
    ///
    /// The default of 32 bytes gives 256 bits of entropy, enough for bearer tokens.
    package static func token(byteCount: Int = 32) -> String {
        Base64URL.encode(bytes(count: byteCount))
    }

    /// The SHA-256 digest of the UTF-8 bytes of `string`.
    ///
    /// Tokens are stored by digest, so a leaked database does not hand out usable tokens.
    package static func sha256(_ string: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(string.utf8)))
    }

    /// The SHA-256 digest of `string`, as 64 lowercase hexadecimal digits.
    package static func sha256Hex(_ string: String) -> String {
        hex(sha256(string))
    }

    /// `bytes` as lowercase hexadecimal.
    package static func hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Compares two byte strings in time that depends only on their lengths, never on their contents.
    ///
    /// Use it for every comparison of a secret (password hash, token digest) with a guess, so that
    /// response time does not reveal how many leading bytes were right.
    package static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices {
            difference |= lhs[index] ^ rhs[index]
        }
        return difference == 0
    }
}
