import CUsherLinux
import Logging
import UsherProviders

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

/// A file or directory usherd will not use as it is, and what the operator can do about it.
package struct UnsafeFileError: Error, CustomStringConvertible {
    package var path: String
    package var problem: String
    package var remedy: String

    package var description: String { "\(self.path): \(self.problem); \(self.remedy)" }
}

/// The start-up checks of every file and directory usherd keeps secrets in or takes orders from, in one place.
///
/// The rules are OpenSSH's (sshd's `StrictModes`, ssh's check of private keys), decided per kind of file:
/// - **Refused** (usherd exits with status 77): a state directory, or a directory above it, that someone other than
///   root and the daemon's user owns or may write (a sticky directory such as `/tmp` excepted), a symbolic link on the
///   way that such a user owns, a state directory others may write into (they could have planted files in it), a
///   state file that is not a regular file or belongs to someone else, and a key file (the signing key, the token
///   encryption key) that is a symbolic link, belongs to someone else, or that others may read: like ssh's
///   "UNPROTECTED PRIVATE KEY FILE", a key others could read may have been copied, and only the operator can decide.
/// - **Repaired, with a warning in the log**: a state directory others may only read or enter (set back to 0700, as
///   systemd's `StateDirectoryMode=` does at every start), and the database, its `-wal` and `-shm` files and the lock
///   file when group or others have any access (set back to 0600). These are the daemon's own files, typically
///   loosened by a copy, a restore or a `sqlite3` session with a loose umask; refusing would stop every login until an
///   operator came, while the warning says the tokens in them may have been read.
/// - **Warned about**: a secret the configuration points at (`client_secret_file`) that others may read.
/// - **Refused, also at reload**: the configuration file, a function's program or a JWK set file that someone else
///   owns or may write (ssh's rule for its configuration, sshd's for `AuthorizedKeysCommand`).
///
/// Owners: "someone else" is anyone but root and the daemon's user. Permissions: a POSIX access ACL counts, so that a
/// systemd credential (mode 0400, readable by the service's user through an ACL entry) is private, while an ACL entry
/// for any other user or group is not.
package struct FileSafety: Sendable {
    let uid: uid_t
    let logger: Logger

    package init(logger: Logger, uid: uid_t = geteuid()) {
        self.logger = logger
        self.uid = uid
    }

    // MARK: The state directory

    /// Creates the state directory (0700) when missing and makes sure nobody but root and the daemon's user can read
    /// it, rearrange it or the directories above it. Returns the directory's real path.
    @discardableResult
    package func prepareStateDirectory(_ path: String) throws(UnsafeFileError) -> String {
        let absolute = Self.absolute(path)
        // Before creating anything: a foreign symbolic link on the way would make mkdir create directories where its
        // owner chose.
        try self.refuseForeignSymbolicLinks(on: absolute, what: "state directory")
        var partial = ""
        for component in absolute.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, 0o700) != 0, errno != EEXIST {
                throw UnsafeFileError(
                    path: path,
                    problem: "cannot create \(partial): \(Self.errorText())",
                    remedy: "create it (mode 0700, owned by the daemon's user) or fix the directory above it"
                )
            }
        }
        // Again after mkdir: a link that appeared in the meantime is caught here.
        try self.refuseForeignSymbolicLinks(on: absolute, what: "state directory")
        guard let real = realpath(absolute, nil) else {
            throw UnsafeFileError(path: path, problem: Self.errorText(), remedy: "check the path")
        }
        let resolved = String(cString: real)
        free(real)
        try self.refuseUnsafeAncestors(of: resolved, for: path)

        var info = stat()
        guard stat(resolved, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw UnsafeFileError(
                path: path,
                problem: "not a directory",
                remedy: "point state_directory at a directory"
            )
        }
        guard info.st_uid == self.uid else {
            throw UnsafeFileError(
                path: path,
                problem: "owned by uid \(info.st_uid), not by the daemon's user (uid \(self.uid))",
                remedy: "chown it to the daemon's user, or use another directory"
            )
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o022 == 0 else {
            throw UnsafeFileError(
                path: path,
                problem: "writable by group or others (mode \(Self.octal(mode))): its files may have been replaced",
                remedy: "check its contents, then run chmod 700 on it"
            )
        }
        if mode & 0o077 != 0 {
            guard chmod(resolved, mode & 0o700) == 0 else {
                throw UnsafeFileError(
                    path: path,
                    problem:
                        "readable by group or others (mode \(Self.octal(mode))) and chmod failed: \(Self.errorText())",
                    remedy: "run chmod 700 on it"
                )
            }
            self.logger.warning(
                "state directory was accessible to group or others: changed its mode to \(Self.octal(mode & 0o700))",
                metadata: ["path": "\(path)", "mode.before": "\(Self.octal(mode))"]
            )
        }
        return resolved
    }

    /// The database, its write-ahead log and shared-memory index: the daemon's own files, repaired to 0600 when others
    /// have access (and logged), refused when they are not regular files or belong to someone else.
    package func checkStateFiles(in directory: String) throws(UnsafeFileError) {
        for name in ["usher.sqlite", "usher.sqlite-wal", "usher.sqlite-shm"] {
            let path = "\(directory)/\(name)"
            let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            if descriptor < 0 {
                if errno == ENOENT { continue }
                throw self.openError(path, what: "state file")
            }
            defer { close(descriptor) }
            try self.keepPrivate(descriptor, path: path, what: "state file")
        }
    }

    /// Makes the open file `descriptor` (at `path`) private to the daemon: refused when it is not a regular file or
    /// belongs to someone else; mode set back to 0600, with a warning, when group or others have access.
    func keepPrivate(_ descriptor: Int32, path: String, what: String) throws(UnsafeFileError) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw self.openError(path, what: what) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw UnsafeFileError(path: path, problem: "not a regular file", remedy: "move it out of the way")
        }
        try self.refuseForeignOwner(info, path: path, what: what)
        let mode = info.st_mode & 0o7777
        guard self.othersMay(0o7, descriptor: descriptor, info: info) else { return }
        guard fchmod(descriptor, 0o600) == 0 else {
            throw UnsafeFileError(
                path: path,
                problem:
                    "accessible to group or others (mode \(Self.octal(mode))) and chmod failed: \(Self.errorText())",
                remedy: "run chmod 600 on it"
            )
        }
        self.logger.warning(
            "\(what) was accessible to group or others: changed its mode to 0600; the tokens it holds may have been read",
            metadata: ["path": "\(path)", "mode.before": "\(Self.octal(mode))", "mode.after": "0600"]
        )
    }

    // MARK: Keys and secrets

    /// Reads a secret key file (at most `limit` bytes) after checking that it is a regular file, not a symbolic link,
    /// owned by root or the daemon's user, in directories nobody else can rearrange, and readable by nobody else.
    ///
    /// - Parameter role: what the key is, for messages (`"token encryption key"`).
    package func readKeyFile(_ path: String, role: String, limit: Int = 4096) throws(UnsafeFileError) -> [UInt8] {
        try self.refuseForeignSymbolicLinks(on: Self.absolute(path), what: role)
        if let real = realpath(path, nil) {
            defer { free(real) }
            try self.refuseUnsafeAncestors(of: String(cString: real), for: path)
        }
        // O_NOFOLLOW: a symbolic link is refused, not followed; O_NONBLOCK: a FIFO cannot hang the start. The checks
        // use the opened descriptor, so the file checked is the file read.
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw self.openError(path, what: role) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw UnsafeFileError(path: path, problem: "\(role): not a regular file", remedy: "use a regular file")
        }
        try self.refuseForeignOwner(info, path: path, what: role)
        if self.othersMay(0o4, descriptor: descriptor, info: info) {
            throw UnsafeFileError(
                path: path,
                problem: "UNPROTECTED \(role.uppercased()) FILE: permissions \(Self.octal(info.st_mode & 0o7777)) "
                    + "are too open, it is readable by group or others and may have been copied",
                remedy: "replace the key if others may have read it, and run chmod 600 on it"
            )
        }
        var bytes = [UInt8](repeating: 0, count: limit)
        var count = 0
        while count < limit {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, limit - count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw self.openError(path, what: role) }
            if got == 0 { break }
            count += got
        }
        return Array(bytes[..<count])
    }

    /// Warns about every secret file `configuration` names that others may read.
    package func warnAboutReadableSecrets(of configuration: DaemonConfiguration) {
        for secret in configuration.secretFiles {
            self.warnIfReadableByOthers(secretFile: secret.path, setting: secret.setting)
        }
    }

    /// Logs an ssh-style warning when a secret the configuration points at is readable by group or others.
    ///
    /// - Parameter setting: the configuration key that names the file (`providers.corp.client_secret_file`).
    package func warnIfReadableByOthers(secretFile path: String, setting: String) {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, self.othersMay(0o4, descriptor: descriptor, info: info) else { return }
        let mode = Self.octal(info.st_mode & 0o7777)
        let text =
            "UNPROTECTED SECRET FILE: permissions \(mode) for '\(path)' are too open: it is readable by group or "
            + "others; run chmod 600 on it"
        self.logger.warning("\(text)", metadata: ["path": "\(path)", "setting": "\(setting)", "mode": "\(mode)"])
    }

    // MARK: Files usherd takes orders from

    /// Refuses the files usherd takes orders from when someone else could rewrite them: the configuration file, each
    /// function's program, each delivery hook's program and each JWK set file. A rewritable configuration or program is code run as the daemon's
    /// user; a rewritable JWK set is a forged login. (ssh refuses its configuration in that state, and sshd its
    /// `AuthorizedKeysCommand`.) A file that does not exist is left to whoever reads it.
    package func refuseRewritableFiles(of configuration: DaemonConfiguration, path: String?) throws(UnsafeFileError) {
        if let path { try self.refuseRewritableByOthers(path, what: "configuration file") }
        for case .local(_, let local) in configuration.providers {
            if let program = local.function?.command.first {
                try self.refuseRewritableByOthers(program, what: "function command")
            }
            for (hook, what) in [
                (local.registration.confirmHook, "confirm_hook"), (local.registration.resetHook, "reset_hook"),
            ] {
                if let program = hook?.command.first { try self.refuseRewritableByOthers(program, what: what) }
            }
            for token in [local.jwt].compactMap({ $0 }) + local.idTokenIssuers.values {
                if case .file(let keys) = token.keys { try self.refuseRewritableByOthers(keys, what: "JWK set file") }
            }
        }
    }

    /// Refuses `path` when someone else owns it or may write it, or could swap it (a foreign symbolic link on the
    /// way, a directory above it that someone else owns or may write).
    func refuseRewritableByOthers(_ path: String, what: String) throws(UnsafeFileError) {
        try self.refuseForeignSymbolicLinks(on: Self.absolute(path), what: what)
        guard let real = realpath(path, nil) else { return }
        let resolved = String(cString: real)
        free(real)
        try self.refuseUnsafeAncestors(of: resolved, for: path)
        let descriptor = open(resolved, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return }
        try self.refuseForeignOwner(info, path: path, what: what)
        if self.othersMay(0o2, descriptor: descriptor, info: info) {
            throw UnsafeFileError(
                path: path,
                problem: "\(what) writable by group or others (mode \(Self.octal(info.st_mode & 0o7777))): they could "
                    + "make usherd run or trust what they like",
                remedy: "run chmod go-w on it"
            )
        }
    }

    // MARK: The checks the others are made of

    /// Refuses a symbolic link, anywhere in `path` (absolute), whose owner is neither root nor the daemon's user: its
    /// owner decides where the path leads.
    func refuseForeignSymbolicLinks(on path: String, what: String) throws(UnsafeFileError) {
        var partial = ""
        for component in path.split(separator: "/") {
            partial += "/" + component
            var info = stat()
            guard lstat(partial, &info) == 0 else { return }
            if info.st_mode & S_IFMT == S_IFLNK && !self.isTrusted(info.st_uid) {
                throw UnsafeFileError(
                    path: path,
                    problem: "\(partial) is a symbolic link owned by uid \(info.st_uid), who could point the \(what) "
                        + "anywhere",
                    remedy: "point the setting at the real path, owned by root or the daemon's user"
                )
            }
        }
    }

    /// Refuses the directories above `real` (a path without symbolic links) when someone else owns one, or may write
    /// one that has no sticky bit: either could rename the file or directory below and put their own in its place.
    func refuseUnsafeAncestors(of real: String, for path: String) throws(UnsafeFileError) {
        var ancestors = ["/"]
        var partial = ""
        for component in real.split(separator: "/").dropLast() {
            partial += "/" + component
            ancestors.append(partial)
        }
        for ancestor in ancestors {
            var info = stat()
            guard stat(ancestor, &info) == 0 else { continue }
            if !self.isTrusted(info.st_uid) {
                throw UnsafeFileError(
                    path: path,
                    problem: "the directory \(ancestor) above it is owned by uid \(info.st_uid), who could replace it",
                    remedy: "move it to a directory owned by root or the daemon's user"
                )
            }
            if info.st_mode & 0o022 != 0 && info.st_mode & S_ISVTX == 0 {
                throw UnsafeFileError(
                    path: path,
                    problem: "the directory \(ancestor) above it is writable by group or others "
                        + "(mode \(Self.octal(info.st_mode & 0o7777))), who could replace it",
                    remedy: "run chmod go-w on \(ancestor), or move it elsewhere"
                )
            }
        }
    }

    func refuseForeignOwner(_ info: stat, path: String, what: String) throws(UnsafeFileError) {
        guard !self.isTrusted(info.st_uid) else { return }
        throw UnsafeFileError(
            path: path,
            problem: "\(what) owned by uid \(info.st_uid), neither root nor the daemon's user (uid \(self.uid))",
            remedy: "chown it to the daemon's user if you trust its contents"
        )
    }

    private func isTrusted(_ owner: uid_t) -> Bool { owner == 0 || owner == self.uid }

    /// Whether anyone but the owner and the daemon's user has any of `permissions` (4 read, 2 write, 1 execute) on
    /// the open file. With a POSIX access ACL, the mode's group bits are the ACL's mask, so the entries decide.
    func othersMay(_ permissions: mode_t, descriptor: Int32, info: stat) -> Bool {
        guard let acl = Self.accessACL(descriptor) else {
            return info.st_mode & (permissions << 3 | permissions) != 0
        }
        let mask = acl.first { $0.tag == 0x10 }?.permissions ?? 0o7
        for entry in acl {
            let granted = UInt16(permissions) & entry.permissions
            switch entry.tag {
            case 0x02 where entry.id != self.uid:  // ACL_USER: a named user other than the daemon's
                if granted & mask != 0 { return true }
            case 0x04, 0x08:  // ACL_GROUP_OBJ, ACL_GROUP
                if granted & mask != 0 { return true }
            case 0x20:  // ACL_OTHER
                if granted != 0 { return true }
            default:
                continue
            }
        }
        return false
    }

    /// The entries of the file's `system.posix_acl_access` attribute (version 2: a 4-byte header, then 8 bytes per
    /// entry: tag, permissions, id, little-endian), or nil when it has none.
    static func accessACL(_ descriptor: Int32) -> [(tag: UInt16, permissions: UInt16, id: UInt32)]? {
        var value = [UInt8](repeating: 0, count: 4 + 8 * 64)
        let size = usher_fgetxattr(descriptor, "system.posix_acl_access", &value, value.count)
        guard size >= 4, (size - 4) % 8 == 0 else { return nil }
        func number(_ offset: Int, _ count: Int) -> UInt32 {
            (0..<count).reduce(UInt32(0)) { $0 | UInt32(value[offset + $1]) << (8 * UInt32($1)) }
        }
        return stride(from: 4, to: size, by: 8).map { offset in
            (UInt16(number(offset, 2)), UInt16(number(offset + 2, 2)), number(offset + 4, 4))
        }
    }

    private func openError(_ path: String, what: String) -> UnsafeFileError {
        let code = errno
        if code == ELOOP {
            return UnsafeFileError(
                path: path,
                problem: "\(what) is a symbolic link, which usherd does not follow",
                remedy: "put the file itself there"
            )
        }
        return UnsafeFileError(path: path, problem: "\(what): \(String(cString: strerror(code)))", remedy: "check it")
    }

    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        return FileManager.default.currentDirectoryPath + "/" + path
    }

    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}
