import Crypto
import UsherCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encryption at rest of the session secrets the database holds (access tokens, refresh tokens, provider data), with
/// ChaCha20-Poly1305 and a 256-bit key the daemon reads from a file (typically a systemd credential,
/// `LoadCredentialEncrypted=`).
///
/// Each value is sealed on its own with a fresh nonce and stored as `enc1:<base64 of nonce|ciphertext|tag>`. Values
/// without the prefix are plaintext from before encryption was turned on; they are read as they are and sealed when
/// the store loads them with a key (`AppDatabase.loadSessions`).
package struct TokenCipher: Sendable {
    private static let prefix = "enc1:"
    /// The key's bytes (swift-crypto 3's `SymmetricKey` is not `Sendable`; the bytes are, and a key is cheap to
    /// make from them).
    private let keyBytes: [UInt8]

    private var key: SymmetricKey { SymmetricKey(data: self.keyBytes) }

    package init(keyBytes: [UInt8]) {
        precondition(keyBytes.count == 32, "a token encryption key has 32 bytes")
        self.keyBytes = keyBytes
    }

    /// Makes the key from a key file's contents: 32 raw bytes, or 64 hexadecimal digits, or the base64 form of 32 bytes
    /// (surrounding white space ignored).
    ///
    /// Reading the file is the caller's part, with its checks (owner, mode, no symbolic link: `FileSafety` in the
    /// daemon), so that the rules for every secret file usherd reads are in one place.
    ///
    /// - Parameter path: the file's path, for messages only.
    package init(keyFileContents raw: [UInt8], path: String) throws(StoreError) {
        guard !raw.isEmpty else { throw .tokenKey(path: path, reason: "empty") }
        if raw.count == 32 {
            self.init(keyBytes: raw)
            return
        }
        let text = String(decoding: raw, as: UTF8.self).trimmingWhitespaceAndNewlines()
        if text.count == 64, let decoded = Self.hex(text) {
            self.init(keyBytes: decoded)
        } else if let decoded = Data(base64Encoded: text), decoded.count == 32 {
            self.init(keyBytes: Array(decoded))
        } else {
            throw .tokenKey(path: path, reason: "must hold 32 bytes: raw, as 64 hexadecimal digits, or in base64")
        }
    }

    private static func hex(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            guard let h = Self.nibble(high), let l = Self.nibble(low) else { return nil }
            bytes.append(h << 4 | l)
        }
        return bytes.count == 32 ? bytes : nil
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Whether a stored value is plaintext that a cipher would seal (a value from before encryption was turned on).
    static func isPlaintext(_ stored: String?) -> Bool {
        stored.map { !$0.hasPrefix(Self.prefix) } ?? false
    }

    func seal(_ value: String?) throws -> String? {
        guard let value else { return nil }
        let box = try ChaChaPoly.seal(Data(value.utf8), using: self.key)
        return Self.prefix + box.combined.base64EncodedString()
    }

    /// Opens stored values with an optional cipher, making the key once for many values (a load opens up to three per
    /// user). Not `Sendable` (it holds a `SymmetricKey`): make one per load.
    struct Opener {
        private let key: SymmetricKey?

        init(_ cipher: TokenCipher?) {
            self.key = cipher?.key
        }

        /// Opens a stored value; plaintext from before encryption passes through, and an encrypted value without a
        /// key is an error that says so.
        func open(_ stored: String?) throws(StoreError) -> String? {
            guard let stored else { return nil }
            guard stored.hasPrefix(TokenCipher.prefix) else { return stored }
            guard let key = self.key else { throw .tokensEncrypted }
            guard let combined = Data(base64Encoded: String(stored.dropFirst(TokenCipher.prefix.count))),
                let box = try? ChaChaPoly.SealedBox(combined: combined),
                let plain = try? ChaChaPoly.open(box, using: key)
            else { throw .wrongTokenKey }
            return String(decoding: plain, as: UTF8.self)
        }
    }
}
