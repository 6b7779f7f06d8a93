import Crypto
import DequeModule
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Which peers' executables are hashed: those of the uids and groups that rules with `executable_sha256` are about.
/// Root and usherd's own uid have every permission whatever the rules say, so theirs never are.
package struct DigestDemand: Sendable, Hashable {
    var uids: Set<UInt32> = []
    var gids: Set<UInt32> = []
    var privileged: Set<UInt32> = [0]

    package init() {}

    package init(_ policy: AccessPolicy) {
        self.privileged = [0, policy.daemonUID]
        for rule in policy.rules where rule.program?.executableSHA256 != nil {
            switch rule.principal {
            case .uid(let uid), .user(_, let uid): self.uids.insert(uid)
            case .group(_, let gid): self.gids.insert(gid)
            }
        }
    }

    /// The peers of either.
    func union(_ other: DigestDemand) -> DigestDemand {
        var both = self
        both.uids.formUnion(other.uids)
        both.gids.formUnion(other.gids)
        both.privileged.formIntersection(other.privileged)
        return both
    }

    /// Whether some rule with `executable_sha256` may apply to `program`'s peer.
    func wants(_ program: PeerProgram) -> Bool {
        guard program.identity.identified, program.identity.file != nil, let owner = program.owner else { return false }
        guard !self.privileged.contains(owner.uid) else { return false }
        return self.uids.contains(owner.uid) || self.gids.contains(owner.gid)
            || owner.groups.contains(where: self.gids.contains)
    }
}

/// SHA-256 digests of peers' executables, for rules with `executable_sha256`: computed only for the peers such a rule
/// is about (`DigestDemand`), once per file (cached by device, inode, size, mtime and ctime), on threads of their own.
///
/// Hashing never holds up anyone else. A connection whose peer's digest is wanted waits for that digest before its
/// first request is read, and only it does: the digests are computed on `workers` threads of their own (not the
/// thread pool that identifies every new connection), taking turns by uid, with at most one file of a uid hashed at a
/// time (and at most `maximumQueuedPerUID` waiting), so a uid that connects from many large executables delays only
/// its own connections. A file larger than `maximumBytes` is not hashed at all: it has no digest, and rules with
/// `executable_sha256` do not match it.
///
/// It also lists the programs of the connections that are open, so that a reload which adds such a rule hashes
/// their executables before the rule applies (`prepare(_:)`): a connection opened before the reload is judged
/// as one opened after it.
package final class ExecutableDigests: Sendable {
    private struct Listed {
        weak var program: PeerProgram?
    }

    private struct State {
        var cache: [ExecutableFile: String] = [:]
        var open: [ObjectIdentifier: Listed] = [:]
        /// Whose programs are hashed.
        var demand: DigestDemand
        var maximumBytes: Int64
        /// Programs waiting to be hashed, by uid, and the uids whose turn comes next, in order.
        var queued: [UInt32: Deque<PeerProgram>] = [:]
        var turns: Deque<UInt32> = []
        /// What to call once a program queued or being hashed has its digest.
        var waiting: [ObjectIdentifier: [@Sendable () -> Void]] = [:]
        /// Uids one of whose files is being hashed.
        var hashing: Set<UInt32> = []
        var poolStarted = false
    }

    /// Distinct executables remembered at most; the cache starts again empty beyond it.
    static let cacheLimit = 1024
    /// Files hashed at once, at most.
    static let workers = 2
    /// Files of one uid waiting to be hashed, at most (as many as `max_connections_per_uid` by default): beyond it a
    /// program gets no digest, so a uid that connects and hangs up in a loop cannot grow the queue without end.
    static let maximumQueuedPerUID = 64
    /// The largest executable hashed by default (`[limits] max_hashed_executable_bytes`).
    package static let defaultMaximumBytes: Int64 = 256 << 20

    private let state: Mutex<State>
    /// The digests' own threads, started when the first file is to be hashed.
    private let pool = NIOThreadPool(numberOfThreads: ExecutableDigests.workers)

    package init(demand: DigestDemand = DigestDemand(), maximumBytes: Int64 = ExecutableDigests.defaultMaximumBytes) {
        self.state = Mutex(State(demand: demand, maximumBytes: maximumBytes))
    }

    deinit {
        if self.state.withLock({ $0.poolStarted }) { self.pool.shutdownGracefully { _ in } }
    }

    /// Whose programs are hashed from now on.
    var demand: DigestDemand {
        get { self.state.withLock { $0.demand } }
        set { self.state.withLock { $0.demand = newValue } }
    }

    /// The largest file hashed from now on.
    var maximumBytes: Int64 {
        get { self.state.withLock { $0.maximumBytes } }
        set { self.state.withLock { $0.maximumBytes = newValue } }
    }

    /// Lists a newly identified program (until its connection ends) and calls `ready` once it has its digest, when
    /// a rule wants one, or at once when none does. Listing and reading the demand under one lock: a `prepare`
    /// either sees the program or the program sees the demand.
    func enlist(_ program: PeerProgram, ready: @escaping @Sendable () -> Void) {
        let wanted = self.state.withLock { state in
            state.open[ObjectIdentifier(program)] = Listed(program: program)
            return state.demand.wants(program)
        }
        guard wanted else { return ready() }
        self.request(program, ready: ready)
    }

    func forget(_ program: ObjectIdentifier) {
        _ = self.state.withLock { $0.open.removeValue(forKey: program) }
    }

    /// Sets whose programs are hashed and computes the digest of every open connection's program that `demand` wants
    /// and has none yet. A reload awaits this before it puts a policy with `executable_sha256` in force.
    package func prepare(_ demand: DigestDemand) async {
        let programs = self.state.withLock { state in
            state.demand = demand
            return state.open.values.compactMap(\.program).filter { demand.wants($0) && !$0.hasDigest }
        }
        await withTaskGroup(of: Void.self) { group in
            for program in programs {
                group.addTask {
                    await withCheckedContinuation { continuation in
                        self.request(program) { continuation.resume() }
                    }
                }
            }
        }
    }

    /// Gives `program` its digest from the cache, or queues it to be hashed; `ready` is called once it has one.
    private func request(_ program: PeerProgram, ready: @escaping @Sendable () -> Void) {
        guard !program.hasDigest, let file = program.identity.file, let uid = program.owner?.uid else {
            return ready()
        }
        let key = ObjectIdentifier(program)
        let answered: Bool = self.state.withLock { state in
            // The cap first: a file cached before a reload lowered it is over it all the same.
            if file.size > state.maximumBytes {
                program.setDigest(nil)
                return true
            }
            if let cached = state.cache[file] {
                program.setDigest(cached)
                return true
            }
            if state.waiting[key] != nil {
                // Queued or being hashed already (a reload asked while the connection was still being set up).
                state.waiting[key]!.append(ready)
                return false
            }
            guard state.queued[uid, default: []].count < Self.maximumQueuedPerUID else {
                program.setDigest(nil)
                return true
            }
            state.waiting[key] = [ready]
            state.queued[uid, default: []].append(program)
            if !state.turns.contains(uid) { state.turns.append(uid) }
            return false
        }
        if answered { return ready() }
        self.startNext()
    }

    /// Hands queued programs to free threads: the next uid in turn that has no file being hashed yet.
    private func startNext() {
        let (jobs, startPool) = self.state.withLock { state in
            var jobs: [(uid: UInt32, program: PeerProgram)] = []
            while state.hashing.count < Self.workers,
                let index = state.turns.firstIndex(where: { !state.hashing.contains($0) })
            {
                let uid = state.turns.remove(at: index)
                let program = state.queued[uid]!.removeFirst()
                if state.queued[uid]!.isEmpty { state.queued[uid] = nil } else { state.turns.append(uid) }
                state.hashing.insert(uid)
                jobs.append((uid, program))
            }
            let startPool = !jobs.isEmpty && !state.poolStarted
            if startPool { state.poolStarted = true }
            return (jobs, startPool)
        }
        if startPool { self.pool.start() }
        for job in jobs {
            self.pool.submit { _ in
                self.computeDigest(for: job.program)
                let ready = self.state.withLock { state in
                    state.hashing.remove(job.uid)
                    return state.waiting.removeValue(forKey: ObjectIdentifier(job.program)) ?? []
                }
                for call in ready { call() }
                self.startNext()
            }
        }
    }

    /// Computes (or finds in the cache) the digest of a program's executable. Blocking: on one of the digests'
    /// threads.
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
        let (cached, maximumBytes) = self.state.withLock { ($0.cache[file], $0.maximumBytes) }
        guard file.size <= maximumBytes else {
            program.setDigest(nil)
            return
        }
        if let cached {
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

    /// The file `stat` described.
    init(_ status: stat) {
        self.init(
            device: UInt64(status.st_dev),
            inode: UInt64(status.st_ino),
            size: Int64(status.st_size),
            modified: Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec),
            changed: Int64(status.st_ctim.tv_sec) * 1_000_000_000 + Int64(status.st_ctim.tv_nsec)
        )
    }
}
