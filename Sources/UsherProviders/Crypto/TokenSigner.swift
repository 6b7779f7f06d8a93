import Crypto
internal import JWTKit
import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Signs and verifies the local provider's access tokens: compact JWS (RFC 7515) JWTs with ES256.
///
/// The signing key is a P-256 private key kept in a PEM file only the daemon's user can read. Its public half
/// is published as a JWK so that services can verify tokens without asking the daemon; the key ID is the
/// key's RFC 7638 thumbprint, so it changes exactly when the key does. jwt-kit signs and checks signatures;
/// which headers are acceptable is usher's rule (`verify(_:)`).
///
/// The private key never appears in a description, a mirror or an error.
package struct TokenSigner: Sendable {
    /// The private key, as jwt-kit holds it.
    private let key: ES256PrivateKey

    /// The key ID: the RFC 7638 JWK thumbprint of the public key, in base64url.
    package let keyID: String

    /// The public key, for the `jwks` response.
    package let publicJWK: UsherProtocol.JWK

    /// Uses `privateKey` to sign; for tests, and for callers that manage the key themselves.
    package init(privateKey: P256.Signing.PrivateKey) {
        let coordinates = [UInt8](privateKey.publicKey.rawRepresentation)
        let x = Base64URL.encode(coordinates.prefix(32))
        let y = Base64URL.encode(coordinates.suffix(32))
        let keyID = JWKThumbprint.p256(x: x, y: y)
        self.keyID = keyID
        self.publicJWK = UsherProtocol.JWK(kty: "EC", kid: keyID, use: "sig", alg: "ES256", crv: "P-256", x: x, y: y)
        // A key swift-crypto made always has a raw representation, which is all `ES256PrivateKey(backing:)` reads.
        self.key = try! ES256PrivateKey(backing: privateKey)
    }

    /// A jwt-kit key collection holding only this signer's key, under `keyID` (`JWTSigning`).
    private func keys() async -> JWTKeyCollection {
        await JWTSigning.keys(self.key, keyID: self.keyID)
    }

    // MARK: Tokens

    /// Signs `claims` as a JWT, returning the compact serialisation `header.payload.signature` with the header
    /// `{"alg":"ES256","kid":KEY ID,"typ":"JWT"}`.
    ///
    /// Callers set the registered claims they need (`iss`, `sub`, `aud`, `iat`, `exp`, `jti`).
    ///
    /// - Throws: `EncodingError` if a claim cannot be represented in JSON (a non-finite number).
    package func sign(claims: [String: JSONValue]) async throws -> String {
        try await self.keys().sign(ClaimSet(claims), kid: JWKIdentifier(string: self.keyID))
    }

    /// Returns the claims of `token` if it is a JWT this signer's key signed, or nil.
    ///
    /// Checks the header (`alg` ES256, `kid` this key, no `crit` extensions), then has jwt-kit check the signature.
    /// jwt-kit alone would accept any `alg` and any or no `kid` (it falls back to its only key) and ignores `crit`,
    /// so those checks stay here. It does **not** check `exp`, `nbf`, `iss` or `aud`: that is the caller's policy.
    package func verify(_ token: String) async -> [String: JSONValue]? {
        // Our tokens are a few hundred bytes; refuse to parse anything absurd.
        guard token.utf8.count <= 16 * 1024 else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]),
            Base64URL.decode(parts[1]) != nil,
            let signatureBytes = Base64URL.decode(parts[2]),
            signatureBytes.count == 64
        else { return nil }

        guard let header = try? JSONDecoder().decode([String: JSONValue].self, from: Data(headerBytes)),
            header["alg"] == .string("ES256"),
            header["kid"] == .string(keyID),
            header["crit"] == nil
        else { return nil }

        guard case .verified(let claims) = await ClaimSet.verify(token, with: self.keys()) else { return nil }
        return claims
    }

    // MARK: Key file

    /// Why the signing key file could not be used. Every case names the file; none carries key material.
    package enum KeyFileError: Error, CustomStringConvertible {
        /// The path exists but is not a regular file (a directory, a symbolic link, a FIFO...).
        case notRegularFile(path: String)
        /// The file's mode lets its group or other users read or write it.
        case insecurePermissions(path: String, mode: UInt32)
        /// The file is owned by a user other than the one the daemon runs as.
        case wrongOwner(path: String, owner: UInt32)
        /// The file is not a PEM-encoded P-256 private key.
        case invalidKey(path: String)
        /// A system call on the file or its directory failed.
        case systemCallFailed(path: String, operation: String, errno: Int32)

        package var description: String {
            switch self {
            case .notRegularFile(let path):
                "signing key \(path) is not a regular file"
            case .insecurePermissions(let path, let mode):
                "UNPROTECTED PRIVATE KEY FILE: signing key \(path) has mode \(String(mode & 0o7777, radix: 8)), "
                    + "accessible by group or others, so it may have been copied; delete it to have usherd make a new "
                    + "one (tokens signed with the old one then stop verifying), or run chmod 600 on it if no one can "
                    + "have read it"
            case .wrongOwner(let path, let owner):
                "signing key \(path) is owned by uid \(owner), not by the daemon's user (uid \(geteuid()))"
            case .invalidKey(let path):
                "signing key \(path) is not a PEM-encoded P-256 private key"
            case .systemCallFailed(let path, let operation, let errno):
                "signing key \(path): \(operation) failed: \(String(cString: strerror(errno)))"
            }
        }
    }

    /// Loads the signing key from the PEM file at `path`, or creates one there if none exists.
    ///
    /// An existing file must be a regular file (not a symbolic link), owned by the effective user and
    /// inaccessible to group and others; otherwise this refuses to use it, rather than sign with a key
    /// someone else may have read or planted. A new key is written atomically with mode 0600: into a
    /// temporary file in the same directory, synced, renamed into place, and the directory synced, so a
    /// crash leaves either no key or a whole one. The directory must already exist.
    ///
    /// Assumes a single daemon instance owns the state directory: two processes creating the key at the
    /// same moment would each write one, and the later rename wins.
    package static func loadOrCreate(at path: String) throws(KeyFileError) -> TokenSigner {
        if let pem = try readKeyFile(at: path) {
            guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
                throw .invalidKey(path: path)
            }
            return TokenSigner(privateKey: key)
        }
        let key = P256.Signing.PrivateKey()
        try writeKeyFileAtomically(Array(key.pemRepresentation.utf8), to: path)
        return TokenSigner(privateKey: key)
    }

    /// Reads the key file after checking its type, owner and mode, or returns nil if it does not exist.
    private static func readKeyFile(at path: String) throws(KeyFileError) -> String? {
        // O_NOFOLLOW: a symbolic link is refused, not followed. O_NONBLOCK: opening a FIFO must not hang;
        // it is refused below. The checks use fstat on the opened descriptor, so the file checked is the
        // file read.
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 {
            let error = errno
            if error == ENOENT { return nil }
            if error == ELOOP { throw .notRegularFile(path: path) }
            throw .systemCallFailed(path: path, operation: "open", errno: error)
        }
        defer { close(fd) }

        var status = stat()
        guard fstat(fd, &status) == 0 else {
            throw .systemCallFailed(path: path, operation: "fstat", errno: errno)
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile(path: path) }
        guard status.st_mode & 0o077 == 0 else {
            throw .insecurePermissions(path: path, mode: UInt32(status.st_mode))
        }
        guard status.st_uid == geteuid() else { throw .wrongOwner(path: path, owner: UInt32(status.st_uid)) }

        // A PEM P-256 key is about 240 bytes; anything past 64 KiB is not one.
        let limit = 64 * 1024
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .systemCallFailed(path: path, operation: "read", errno: errno)
            }
            if count == 0 { break }
            contents.append(contentsOf: buffer[..<count])
            guard contents.count <= limit else { throw .invalidKey(path: path) }
        }
        guard let pem = String(validating: contents, as: UTF8.self) else { throw .invalidKey(path: path) }
        return pem
    }

    /// Writes `contents` to `path` with mode 0600 so that the file appears whole or not at all.
    private static func writeKeyFileAtomically(_ contents: [UInt8], to path: String) throws(KeyFileError) {
        let directory = directoryName(of: path)
        let temporaryPath = path + ".tmp-" + SecureRandom.hex(SecureRandom.bytes(count: 8))

        // O_EXCL: never reuse or follow something already at the temporary path. The mode is set at
        // creation, so the key is never readable by others, not even for an instant.
        let fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .systemCallFailed(path: temporaryPath, operation: "open", errno: errno) }
        var renamed = false
        defer { if !renamed { unlink(temporaryPath) } }

        do throws(KeyFileError) {
            // The umask can only remove bits from 0600, but say it explicitly anyway.
            guard fchmod(fd, 0o600) == 0 else {
                throw .systemCallFailed(path: temporaryPath, operation: "fchmod", errno: errno)
            }
            var written = 0
            while written < contents.count {
                let count = contents.withUnsafeBytes { bytes in
                    write(fd, bytes.baseAddress! + written, bytes.count - written)
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw .systemCallFailed(path: temporaryPath, operation: "write", errno: errno)
                }
                written += count
            }
            guard fsync(fd) == 0 else {
                throw .systemCallFailed(path: temporaryPath, operation: "fsync", errno: errno)
            }
        } catch {
            close(fd)
            throw error
        }
        guard close(fd) == 0 else { throw .systemCallFailed(path: temporaryPath, operation: "close", errno: errno) }

        guard rename(temporaryPath, path) == 0 else {
            throw .systemCallFailed(path: path, operation: "rename", errno: errno)
        }
        renamed = true

        // Sync the directory so that the rename itself survives a crash.
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else { throw .systemCallFailed(path: directory, operation: "open", errno: errno) }
        defer { close(directoryFD) }
        guard fsync(directoryFD) == 0 else {
            throw .systemCallFailed(path: directory, operation: "fsync", errno: errno)
        }
    }

    /// The directory part of `path`: everything before the last slash, "/" for a file in the root, or "."
    /// for a bare file name.
    private static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = path[..<slash]
        return directory.isEmpty ? "/" : String(directory)
    }
}

extension TokenSigner: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package var description: String { "TokenSigner(ES256, kid: \(keyID))" }
    package var debugDescription: String { description }
    /// Hides the private key from `dump` and `Mirror`, which would otherwise walk into it.
    package var customMirror: Mirror { Mirror(self, children: ["keyID": keyID], displayStyle: .struct) }
}
