#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The socket's node in the file system: created with its final mode where nobody else can reach it, then published
/// at the configured path with `rename(2)`. Nothing here ever follows a symbolic link at the socket path.
///
/// Why: binding at the path and then `chmod`-ing it leaves a window in which anyone who can write the directory can
/// swap the fresh socket for a symbolic link and have the daemon change the mode of the link's target. The umask
/// trick has no such window but is process-wide, so it races with every other thread creating files. A private
/// directory has neither problem: the socket gets its mode before anyone can see it, and `rename(2)` replaces
/// whatever is at the path (a stale socket, or a link planted meanwhile) without following it.
enum SocketFile {
    /// The node the daemon published, so that it removes only its own socket when it stops.
    struct Identity: Sendable, Hashable {
        var device: UInt64
        var inode: UInt64
    }

    /// `sun_path` holds 108 bytes including the terminating NUL.
    static let maximumPathLength = 107

    /// Checks what is at `path` before binding: nothing, or a stale socket left by a dead daemon (which the rename
    /// will replace), is fine. A live socket is never taken over; a symbolic link is never followed or replaced;
    /// anything else is never deleted.
    static func check(_ path: String) throws(ServerError) {
        guard path.utf8.count <= Self.maximumPathLength else {
            throw .cannotPrepare(path: path, reason: "the path is longer than a Unix socket path may be")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return }
            throw .cannotPrepare(path: path, reason: String(cString: strerror(errno)))
        }
        switch info.st_mode & S_IFMT {
        case S_IFSOCK:
            if Self.isAccepting(path) { throw .socketInUse(path) }
        case S_IFLNK:
            throw .symbolicLink(path)
        default:
            throw .notASocket(path)
        }
    }

    /// Binds a listening socket and publishes it at `path` with `mode`.
    ///
    /// - Parameters:
    ///   - bind: binds and listens at the path it is given (a path inside the private directory).
    ///   - close: closes what `bind` returned, when publishing fails.
    static func bind<Listener>(
        at path: String,
        mode: UInt32,
        _ bind: (String) async throws -> Listener,
        close: (Listener) async -> Void
    ) async throws -> (Listener, Identity?) {
        let (directory, name) = try Self.split(path)
        let parent = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parent >= 0 else { throw Self.failure(path, "cannot open its directory \(directory)") }
        defer { Glibc.close(parent) }
        let privateName = try Self.makePrivateDirectory(in: parent, for: path)
        // By name: if someone swapped the directory meanwhile, this fails or removes their (empty) one, both harmless.
        defer { unlinkat(parent, privateName, AT_REMOVEDIR) }
        let privateDirectory = openat(parent, privateName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard privateDirectory >= 0 else { throw Self.failure(path, "cannot open \(privateName)") }
        defer { Glibc.close(privateDirectory) }
        var info = stat()
        guard fstat(privateDirectory, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            throw ServerError.cannotPrepare(path: path, reason: "\(directory)/\(privateName) was tampered with")
        }
        // Whatever happens, nothing is left behind in the private directory.
        defer { unlinkat(privateDirectory, "s", 0) }

        let listener = try await bind(Self.bindPath(directory: directory, privateName, privateDirectory))
        do {
            // Everything from here on goes through the directory descriptor, never through a path someone could
            // have changed: the node is ours, a socket, and only then gets its mode and its public name.
            guard fstatat(privateDirectory, "s", &info, AT_SYMLINK_NOFOLLOW) == 0,
                info.st_mode & S_IFMT == S_IFSOCK, info.st_uid == geteuid()
            else { throw Self.failure(path, "the new socket is not where it was bound") }
            guard fchmodat(privateDirectory, "s", mode_t(mode), 0) == 0 else { throw Self.failure(path, "chmod") }
            guard renameat(privateDirectory, "s", parent, name) == 0 else { throw Self.failure(path, "rename") }
            var published = stat()
            let identity =
                fstatat(parent, name, &published, AT_SYMLINK_NOFOLLOW) == 0
                ? Identity(device: UInt64(published.st_dev), inode: UInt64(published.st_ino)) : nil
            return (listener, identity)
        } catch {
            await close(listener)
            throw error
        }
    }

    /// Removes the socket at `path` if it is still the one this daemon published (a newer daemon may own the path
    /// by now; a link planted there is removed itself, never followed).
    static func remove(_ path: String, ifStill identity: Identity?) {
        guard let identity else { return }
        var info = stat()
        guard lstat(path, &info) == 0, UInt64(info.st_dev) == identity.device, UInt64(info.st_ino) == identity.inode
        else { return }
        unlink(path)
    }

    /// The path to bind at: through `/proc/self/fd`, which names the directory we opened however the names above
    /// it change; by name only where `/proc` is not mounted.
    private static func bindPath(directory: String, _ privateName: String, _ descriptor: CInt) -> String {
        let viaDescriptor = "/proc/self/fd/\(descriptor)/s"
        if access("/proc/self/fd/\(descriptor)", F_OK) == 0 { return viaDescriptor }
        return directory == "/" ? "/\(privateName)/s" : "\(directory)/\(privateName)/s"
    }

    /// Creates a fresh 0700 directory next to the socket (so the rename stays on one file system); returns its name.
    private static func makePrivateDirectory(in parent: CInt, for path: String) throws -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        for _ in 0..<100 {
            let suffix = String(decoding: (0..<10).map { _ in alphabet.randomElement()! }, as: UTF8.self)
            let name = ".usherd-\(suffix)"
            if mkdirat(parent, name, 0o700) == 0 { return name }
            guard errno == EEXIST else { throw Self.failure(path, "cannot create a directory next to it") }
        }
        throw Self.failure(path, "cannot create a directory next to it")
    }

    private static func split(_ path: String) throws(ServerError) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let name = String(path[path.index(after: slash)...])
        guard !name.isEmpty, name != ".", name != ".." else {
            throw .cannotPrepare(path: path, reason: "the path does not name a file")
        }
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        return (directory, name)
    }

    private static func failure(_ path: String, _ what: String) -> ServerError {
        .cannotPrepare(path: path, reason: "\(what): \(String(cString: strerror(errno)))")
    }

    /// Whether something accepts connections on the socket at `path`.
    private static func isAccepting(_ path: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { Glibc.close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }
}

package enum ServerError: Error, CustomStringConvertible {
    case socketInUse(String)
    case notASocket(String)
    case symbolicLink(String)
    case cannotPrepare(path: String, reason: String)

    package var description: String {
        switch self {
        case .socketInUse(let path): "another daemon is already listening on \(path)"
        case .notASocket(let path): "\(path) exists and is not a socket; refusing to replace it"
        case .symbolicLink(let path):
            "\(path) is a symbolic link; usherd never follows or replaces a link at its socket path "
                + "(remove it, or set daemon.socket to the real location)"
        case .cannotPrepare(let path, let reason): "cannot listen on \(path): \(reason)"
        }
    }
}
