import Crypto
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// SHA-256 digests of peers' executables, for rules with `executable_sha256`: computed only while some rule in force
/// asks for them, once per file (cached by device, inode, size, mtime and ctime), off the event loop.
///
/// It also lists the programs of the connections that are open, so that a reload which adds such a rule hashes
/// their executables before the rule applies (`prepare(wanted:)`): a connection opened before the reload is judged
/// as one opened after it.
package final class ExecutableDigests: Sendable {
    private struct Listed {
        weak var program: PeerProgram?
    }

    private struct State {
        var cache: [ExecutableFile: String] = [:]
        var open: [ObjectIdentifier: Listed] = [:]
        /// Whether newly identified programs are hashed at once.
        var wanted = false
    }

    /// Distinct executables remembered at most; the cache starts again empty beyond it.
    static let cacheLimit = 1024

    private let state: Mutex<State>

    package init(wanted: Bool = false) {
        self.state = Mutex(State(wanted: wanted))
    }

    /// Whether programs identified from now on are hashed at once.
    var wanted: Bool {
        get { self.state.withLock { $0.wanted } }
        set { self.state.withLock { $0.wanted = newValue } }
    }

    /// Lists a newly identified program (until its connection ends), and tells whether its digest is wanted now.
    /// Listing and reading `wanted` under one lock: a `prepare` either sees the program or the program sees the flag.
    func enlist(_ program: PeerProgram) -> Bool {
        self.state.withLock { state in
            state.open[ObjectIdentifier(program)] = Listed(program: program)
            return state.wanted
        }
    }

    func forget(_ program: ObjectIdentifier) {
        _ = self.state.withLock { $0.open.removeValue(forKey: program) }
    }

    /// Sets whether digests are wanted and, when they are, computes the digest of every open connection's program
    /// that has none yet, on `pool`. A reload awaits this before it puts a policy with `executable_sha256` in force.
    package func prepare(wanted: Bool, on pool: NIOThreadPool = .singleton) async {
        let programs = self.state.withLock { state in
            state.wanted = wanted
            return wanted ? state.open.values.compactMap(\.program) : []
        }
        for program in programs where !program.hasDigest {
            _ = try? await pool.runIfActive { self.computeDigest(for: program) }
        }
    }

    /// Computes (or finds in the cache) the digest of a program's executable. Blocking: on a thread pool's thread.
    ///
    /// The file is opened through `/proc/PID/exe` (it works across mount namespaces and for deleted files), else by
    /// its path; either way it must still be the file that was identified (`ExecutableFile`), before and after it is
    /// read, or the program gets no digest, and rules with `executable_sha256` do not match it.
    func computeDigest(for program: PeerProgram) {
        guard !program.hasDigest else { return }
        guard program.identity.identified, let file = program.identity.file else {
            program.setDigest(nil)
            return
        }
        if let cached = self.state.withLock({ $0.cache[file] }) {
            program.setDigest(cached)
            return
        }
        let digest =
            Self.digest(ofFileAt: "/proc/\(program.pid)/exe", expecting: file)
            ?? program.identity.executable.flatMap { Self.digest(ofFileAt: $0, expecting: file) }
        if let digest {
            self.state.withLock { state in
                if state.cache.count >= Self.cacheLimit { state.cache.removeAll() }
                state.cache[file] = digest
            }
        }
        program.setDigest(digest)
    }

    /// The SHA-256 (lowercase hex) of the file at `path`, if it is `file` from before it is read until after.
    static func digest(ofFileAt path: String, expecting file: ExecutableFile) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        guard ExecutableFile(descriptor: descriptor) == file else { return nil }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            hasher.update(data: buffer[..<count])
        }
        guard ExecutableFile(descriptor: descriptor) == file else { return nil }
        return Self.hex(hasher.finalize())
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension ExecutableFile {
    /// The file an open descriptor refers to; nil when `fstat` fails.
    init?(descriptor: CInt) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        self.init(status)
    }

    /// The file at `path`, following links (`/proc/PID/exe` included); nil when `stat` fails.
    init?(path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        self.init(status)
    }

    private init(_ status: stat) {
        self.init(
            device: UInt64(status.st_dev),
            inode: UInt64(status.st_ino),
            size: Int64(status.st_size),
            modified: Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec),
            changed: Int64(status.st_ctim.tv_sec) * 1_000_000_000 + Int64(status.st_ctim.tv_nsec)
        )
    }
}
