#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whole text files, for the kubeconfig: read at once, replaced atomically.
enum TextFile {
    /// The file's text; nil when it does not exist. At most 16 MiB: a kubeconfig is a few kilobytes.
    static func read(_ path: String) throws -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw CLIError("cannot read \(Terminal.escaped(path)): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = Glibc.read(descriptor, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw CLIError("cannot read \(Terminal.escaped(path)): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += buffer[0..<count]
            guard bytes.count <= 16 << 20 else { throw CLIError("\(Terminal.escaped(path)) is larger than 16 MiB") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Replaces the file (the one a symbolic link points to) with `text`: a new file beside it with the old one's
    /// mode (0600 for a new one: a kubeconfig holds credentials), synced, then renamed over it, so that a reader
    /// never sees half a file.
    static func replace(_ path: String, with text: String) throws {
        var target = path
        if let resolved = realpath(path, nil) {
            target = String(cString: resolved)
            free(resolved)
        }
        var mode: mode_t = 0o600
        var status = stat()
        if stat(target, &status) == 0 { mode = status.st_mode & 0o7777 }
        let directory = target.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            .joined(separator: "/")
        if !directory.isEmpty, access(directory, F_OK) != 0 { mkdir(directory, 0o700) }
        let temporary = "\(target).usher-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw CLIError("cannot write \(Terminal.escaped(temporary)): \(String(cString: strerror(errno)))")
        }
        fchmod(descriptor, mode)
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let reason = String(cString: strerror(errno))
                close(descriptor)
                unlink(temporary)
                throw CLIError("cannot write \(Terminal.escaped(temporary)): \(reason)")
            }
            bytes = bytes.dropFirst(written)
        }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard synced, rename(temporary, target) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw CLIError("cannot replace \(Terminal.escaped(target)): \(reason)")
        }
    }
}
