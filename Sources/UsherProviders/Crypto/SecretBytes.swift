#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A copy of a secret's UTF-8 bytes in memory this type owns, overwritten with zeros (`explicit_bzero`, which the
/// compiler may not remove) before it is freed.
///
/// Swift gives no control over where a `String` keeps its bytes, nor any way to wipe them: the request line, the
/// decoded JSON and the `String` a password arrives in are freed without being cleared. What this type can promise is
/// narrower: the buffer handed to scrypt, the one copy the daemon makes on purpose, does not outlive the hash.
final class SecretBytes: @unchecked Sendable {
    // @unchecked: `buffer` is written only in `init`, read only inside `withUnsafeBytes` (scrypt's input, never
    // mutated), and zeroed in `deinit`, when no reference and so no reader remains.
    private let buffer: UnsafeMutableRawBufferPointer
    let count: Int

    init(_ secret: String) {
        let count = secret.utf8.count
        self.count = count
        self.buffer = .allocate(byteCount: max(1, count), alignment: 1)
        for (index, byte) in secret.utf8.enumerated() { self.buffer[index] = byte }
    }

    /// Lends the bytes; they must not escape `body`.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(rebasing: self.buffer[0..<self.count]))
    }

    deinit {
        explicit_bzero(self.buffer.baseAddress!, self.buffer.count)
        self.buffer.deallocate()
    }
}
