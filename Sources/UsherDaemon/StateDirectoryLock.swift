import UsherCore

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

/// Another usherd holds the state directory.
package struct StateDirectoryBusyError: Error, CustomStringConvertible {
    package var directory: String
    /// The holder's process ID as it wrote it into the lock file; nil when it could not be read.
    package var holder: pid_t?

    package var description: String {
        let who = self.holder.map { "another usherd (pid \($0))" } ?? "another usherd"
        return "state directory \(self.directory) is in use by \(who); only one daemon may use a state directory: "
            + "stop that one, or give this one another --state-directory"
    }
}

/// The lock file cannot be opened or locked for a reason other than another daemon (a read-only file system, no
/// locks on this file system...).
package struct LockFileError: Error, CustomStringConvertible {
    var path: String
    var operation: String
    var code: Int32

    package var description: String {
        "lock file \(self.path): \(self.operation) failed: \(String(cString: strerror(self.code)))"
    }
}

/// An exclusive `flock` on `usherd.lock` in the state directory, held for the daemon's whole life, so that two daemons
/// never share one database (one would log a user out while the other kept handing out that user's token).
///
/// `flock`, not `fcntl` record locks: a record lock is dropped when *any* descriptor of the file in the process is
/// closed, and belongs to the process rather than to the open file. The lock file holds the holder's process ID
/// (`12345\n`) so that a second daemon can name it; the lock, not the file's content, decides. The descriptor is
/// close-on-exec, so a hook's processes never inherit the lock, and the kernel releases it when the daemon exits,
/// however it exits.
package final class StateDirectoryLock: Sendable {
    package static let fileName = "usherd.lock"
    let descriptor: Int32

    /// Takes the lock, or throws `StateDirectoryBusyError` at once when another process holds it.
    ///
    /// - Throws: `StateDirectoryBusyError`, or `UnsafeFileError` when the lock file is a symbolic link, not a regular
    ///   file, or belongs to someone else (its mode is repaired to 0600 like the other state files).
    package init(directory: String, safety: FileSafety) throws {
        let path = "\(directory)/\(Self.fileName)"
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            guard code == ELOOP else { throw LockFileError(path: path, operation: "open", code: code) }
            throw UnsafeFileError(
                path: path,
                problem: "a symbolic link, which usherd does not follow",
                remedy: "remove it; usherd creates the lock file"
            )
        }
        do {
            try safety.keepPrivate(descriptor, path: path, what: "lock file")
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                let code = errno
                guard code == EWOULDBLOCK else { throw LockFileError(path: path, operation: "flock", code: code) }
                throw StateDirectoryBusyError(directory: directory, holder: Self.holder(descriptor))
            }
        } catch {
            close(descriptor)
            throw error
        }
        // Ours now: replace the previous holder's process ID with ours. A failure here leaves the lock held and
        // only the name in a second daemon's message missing.
        _ = ftruncate(descriptor, 0)
        let line = Array("\(getpid())\n".utf8)
        _ = line.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        self.descriptor = descriptor
    }

    deinit {
        close(self.descriptor)
    }

    /// The process ID the holder wrote, if the file holds one.
    private static func holder(_ descriptor: Int32) -> pid_t? {
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: bytes[..<count], as: UTF8.self).trimmingWhitespaceAndNewlines()
        return pid_t(text).flatMap { $0 > 0 ? $0 : nil }
    }
}
