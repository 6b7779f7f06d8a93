import Foundation
import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherServer
import UsherTestSupport

/// The socket's node: created with its mode, published without a window, never through a symbolic link.
@Suite(.timeLimit(.minutes(3)))
struct SocketFileTests {
    /// Binds a server at `path`, runs `body` while it serves, and stops it.
    static func serving(_ path: String, mode: UInt32, _ body: () async throws -> Void) async throws {
        let registry = try await InProcessServer.makeRegistry()
        let dispatcher = Dispatcher(
            registry: registry,
            version: "test",
            settings: ServerSettings(limits: ServerLimits(), policy: AccessPolicy(daemonUID: getuid())),
            connectionCount: { 0 }
        )
        let server = try await SocketServer.bind(
            .path(path, mode: mode),
            dispatcher: dispatcher,
            tracker: ConnectionTracker(),
            logger: InProcessServer.logger
        )
        try await InProcessServer.serve(server, body)
    }

    static func fileStatus(_ path: String) -> stat? {
        var info = stat()
        return lstat(path, &info) == 0 ? info : nil
    }

    static func mode(_ path: String) -> mode_t? { Self.fileStatus(path).map { $0.st_mode & 0o7777 } }

    static func isSocket(_ path: String) -> Bool {
        Self.fileStatus(path).map { $0.st_mode & S_IFMT == S_IFSOCK } ?? false
    }

    /// A file only root can reach, with mode 0600: what an attacker would like the daemon to chmod.
    static func makeTarget(in directory: TestDirectory) throws -> String {
        #expect(mkdir(directory.file("private"), 0o700) == 0)
        let target = directory.file("private/target")
        try "secret".write(toFile: target, atomically: false, encoding: .utf8)
        chmod(target, 0o600)
        return target
    }

    @Test func aSymbolicLinkAtTheSocketPathIsNeitherFollowedNorReplaced() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let target = try Self.makeTarget(in: directory)
        let path = directory.file("usher.sock")
        #expect(symlink(target, path) == 0)
        do {
            try await Self.serving(path, mode: 0o666) {}
            Issue.record("the server bound at a path that is a symbolic link")
        } catch {
            #expect("\(error)".contains("is a symbolic link"), "\(error)")
        }
        #expect(Self.mode(target) == 0o600)
        #expect(Self.fileStatus(path).map { $0.st_mode & S_IFMT } == S_IFLNK)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["private", "usher.sock"]
        )
    }

    @Test func aStaleSocketIsReplacedByOneThatHasItsModeFromTheStart() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let path = directory.file("usher.sock")
        // A socket file left behind by a daemon that was killed: bound, never removed, nobody listening.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        close(stale)
        #expect(Self.isSocket(path))

        try await Self.serving(path, mode: 0o640) { () async throws in
            #expect(Self.isSocket(path))
            #expect(Self.mode(path) == 0o640)
            #expect(try await LineConnection(path: path).result("hello")["server"] == "usherd")
            // Nothing is left next to it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["usher.sock"])
        }
        // A stopped server removes its socket.
        #expect(Self.fileStatus(path) == nil)
    }

    /// The attack from the issue, as a user who may write the socket's directory (here `nobody` in a 0777
    /// directory): whenever a socket appears at the path, swap in a symbolic link to a file of root's; and whenever
    /// a directory of the daemon's appears next to it, move it away and put one of the attacker's in its place with
    /// such a link inside. However the races fall, the file's mode never changes.
    @Test(.enabled(if: OtherUser.unavailableReason == nil, "acting as another uid (nobody) needs root"))
    func anAttackerWhoCanWriteTheDirectoryCannotRedirectTheMode() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        chmod(directory.path, 0o711)
        let target = try Self.makeTarget(in: directory)
        let shared = directory.file("shared")
        #expect(mkdir(shared, 0o777) == 0)
        chmod(shared, 0o777)
        let path = "\(shared)/usher.sock"

        let stop = Atomic<Bool>(false)
        async let attackerSwaps = OtherUser.run { () -> Int in
            var swaps = 0
            var round = 0
            // Each directory of the daemon's is attacked once: moving the attacker's own replacements again (as
            // this loop once did, its filter never matching the moved names) made tens of thousands of directories,
            // and the test's time went into deleting them.
            var attacked: Set<String> = []
            while !stop.load(ordering: .relaxed) {
                round += 1
                // A short pause between rounds, so that the attacker does not take a whole core from the other
                // tests; the race windows are still hit (the bind-then-chmod daemon lost on the first round).
                usleep(100)
                if Self.isSocket(path) {
                    let link = "\(shared)/link\(round)"
                    if symlink(target, link) == 0, rename(link, path) == 0 { swaps += 1 }
                }
                for name in (try? FileManager.default.contentsOfDirectory(atPath: shared)) ?? []
                where name.hasPrefix(".usherd-") && !name.contains(".moved") && !attacked.contains(name) {
                    attacked.insert(name)
                    let original = "\(shared)/\(name)"
                    if rename(original, original + ".moved\(round)") == 0, mkdir(original, 0o777) == 0 {
                        _ = symlink(target, original + "/s")
                        swaps += 1
                    }
                }
            }
            return swaps
        }
        var served = 0
        var refusals: [String] = []
        for _ in 0..<20 {
            // Start each round from a clean path (a link left by the last round would just be refused).
            unlink(path)
            do {
                try await Self.serving(path, mode: 0o666) { served += 1 }
            } catch {
                // Refusing to start is a fine outcome of an attack; following the link is not.
                refusals.append("\(error)")
            }
            #expect(Self.mode(target) == 0o600, "the daemon changed the mode of the link's target")
            chmod(target, 0o600)
        }
        stop.store(true, ordering: .relaxed)
        let swaps = try await attackerSwaps
        print("attacker swaps: \(swaps); servers that started: \(served) of 20; refusals: \(Set(refusals))")
        #expect(Self.mode(target) == 0o600)
    }
}
