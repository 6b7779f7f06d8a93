import Crypto
import CryptoExtras
import NIOPosix
import UsherCore

/// Hashes and verifies local users' passwords with scrypt.
///
/// A hash is stored as a self-describing string, `$scrypt$ln=15,r=8,p=1$<salt>$<hash>` (salt and hash in
/// unpadded base64url), so the cost can be raised later while hashes made at the old cost still verify.
///
/// scrypt is deliberately slow (about 100 ms and 32 MiB at the default cost), so the derivation runs on the
/// injected `NIOThreadPool`: on the Swift cooperative pool or an event loop it would stall unrelated work.
///
/// Passwords are hashed as their raw UTF-8 bytes, without Unicode normalisation. Those bytes are copied into a
/// `SecretBytes` buffer that is zeroed as soon as the hash is done (what Swift does not let us wipe is said there).
package struct PasswordHasher: Sendable {
    /// The scrypt cost parameters.
    package struct Parameters: Sendable, Hashable, CustomStringConvertible {
        /// The base-2 logarithm of the CPU/memory cost N.
        package var logN: Int
        /// The block size r.
        package var blockSize: Int
        /// The parallelisation factor p.
        package var parallelism: Int

        /// N = 2^15, r = 8, p = 1: the current OWASP recommendation, about 32 MiB and 100 ms per hash.
        package static let standard = Parameters(logN: 15, blockSize: 8, parallelism: 1)

        package init(logN: Int, blockSize: Int, parallelism: Int) {
            self.logN = logN
            self.blockSize = blockSize
            self.parallelism = parallelism
        }

        /// Whether the parameters are within the bounds this daemon is willing to compute.
        ///
        /// Stored hashes are checked against these bounds before any work, so a corrupted or hostile
        /// entry cannot make a login attempt allocate gigabytes or spin for minutes.
        package var isWithinLimits: Bool {
            guard (1...20).contains(logN), (1...32).contains(blockSize), (1...16).contains(parallelism) else {
                return false
            }
            // scrypt needs 128 * r * N bytes of scratch memory; keep it under 1 GiB.
            return (128 * blockSize) << logN <= 1 << 30
        }

        package var description: String { "ln=\(logN),r=\(blockSize),p=\(parallelism)" }
    }

    /// Why hashing a password failed. Never carries the password.
    package enum HashingError: Error, CustomStringConvertible {
        /// The key derivation function reported a failure.
        case derivationFailed

        package var description: String {
            switch self {
            case .derivationFailed: "scrypt key derivation failed"
            }
        }
    }

    /// Salt length in bytes for new hashes.
    package static let saltByteCount = 16
    /// Derived key length in bytes for new hashes.
    package static let hashByteCount = 32

    private static let prefix = "$scrypt$"

    /// The cost used for new hashes.
    package let parameters: Parameters
    private let threadPool: NIOThreadPool

    /// - Parameters:
    ///   - threadPool: where the derivation runs; it must be started, and outlive every call.
    ///   - parameters: the cost for new hashes. Tests pass a cheap cost such as `logN: 10`.
    package init(threadPool: NIOThreadPool, parameters: Parameters = .standard) {
        precondition(parameters.isWithinLimits, "scrypt parameters out of range: \(parameters)")
        self.threadPool = threadPool
        self.parameters = parameters
    }

    /// Hashes `password` with a fresh random salt, returning the encoded string to store.
    ///
    /// - Throws: `HashingError`, or `CancellationError` if the task is cancelled or the thread pool has been
    ///   shut down (NIO reports both as cancellation).
    package func hash(_ password: String) async throws -> String {
        let salt = SecureRandom.bytes(count: Self.saltByteCount)
        let hash = try await derive(
            password: SecretBytes(password),
            salt: salt,
            parameters: parameters,
            byteCount: Self.hashByteCount
        )
        return Self.prefix + "\(parameters)$" + Base64URL.encode(salt) + "$" + Base64URL.encode(hash)
    }

    /// Whether `password` matches the `encoded` hash made by `hash(_:)`, at whatever cost it was made with.
    ///
    /// Returns false, rather than throwing, for a wrong password, a malformed or out-of-limits hash, and a
    /// failed derivation: to a caller, all of them mean "do not let this user in".
    package func verify(_ password: String, against encoded: String) async -> Bool {
        guard let stored = Self.parse(encoded) else { return false }
        guard
            let candidate = try? await derive(
                password: SecretBytes(password),
                salt: stored.salt,
                parameters: stored.parameters,
                byteCount: stored.hash.count
            )
        else { return false }
        return SecureRandom.constantTimeEquals(candidate, stored.hash)
    }

    /// Whether `encoded` was made with a cost other than the current one, and should be replaced by a new
    /// hash the next time the user logs in successfully.
    package func needsRehash(_ encoded: String) -> Bool {
        Self.parse(encoded)?.parameters != parameters
    }

    /// Runs scrypt on the thread pool.
    private func derive(
        password: SecretBytes,
        salt: [UInt8],
        parameters: Parameters,
        byteCount: Int
    ) async throws -> [UInt8] {
        try await threadPool.runIfActive {
            let key: SymmetricKey
            do {
                // An UnsafeRawBufferPointer is one contiguous region, so swift-crypto hands it to scrypt without a
                // copy of its own.
                key = try password.withUnsafeBytes { bytes in
                    try KDF.Scrypt.deriveKey(
                        from: bytes,
                        salt: salt,
                        outputByteCount: byteCount,
                        rounds: 1 << parameters.logN,
                        blockSize: parameters.blockSize,
                        parallelism: parameters.parallelism
                    )
                }
            } catch {
                throw HashingError.derivationFailed
            }
            return key.withUnsafeBytes { Array($0) }
        }
    }

    private struct StoredHash {
        var parameters: Parameters
        var salt: [UInt8]
        var hash: [UInt8]
    }

    /// Parses `$scrypt$ln=<logN>,r=<r>,p=<p>$<salt>$<hash>`, or returns nil.
    private static func parse(_ encoded: String) -> StoredHash? {
        // Bound the input before splitting it: a legitimate hash is well under 200 characters.
        guard encoded.utf8.count <= 512, encoded.hasPrefix(prefix) else { return nil }
        let fields = encoded.dropFirst(prefix.count).split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 3 else { return nil }

        let settings = fields[0].split(separator: ",", omittingEmptySubsequences: false)
        guard settings.count == 3,
            let logN = integer(settings[0], named: "ln"),
            let blockSize = integer(settings[1], named: "r"),
            let parallelism = integer(settings[2], named: "p")
        else { return nil }
        let parameters = Parameters(logN: logN, blockSize: blockSize, parallelism: parallelism)
        guard parameters.isWithinLimits else { return nil }

        // New hashes use 16-byte salts; shorter ones (the RFC 7914 test vectors use 4) still verify.
        guard let salt = Base64URL.decode(fields[1]), (1...64).contains(salt.count),
            let hash = Base64URL.decode(fields[2]), (16...64).contains(hash.count)
        else { return nil }
        return StoredHash(parameters: parameters, salt: salt, hash: hash)
    }

    /// Parses `<name>=<decimal digits>` with at most 3 digits.
    private static func integer(_ setting: Substring, named name: String) -> Int? {
        guard setting.hasPrefix(name + "=") else { return nil }
        let digits = setting.dropFirst(name.count + 1)
        guard (1...3).contains(digits.count), digits.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
        return Int(digits)
    }
}
