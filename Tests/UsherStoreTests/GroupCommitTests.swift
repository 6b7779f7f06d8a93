import Dispatch
import Foundation
import Testing
import UsherTestSupport

@testable import UsherStore

/// Writes that arrive while another is being committed share the next commit: one transaction and one `fsync` for
/// all of them (a login's refresh grant and its user, of many logins at once), and one of them that fails is undone
/// alone.
@Suite(.timeLimit(.minutes(1)))
struct GroupCommitTests {
    struct Refused: Error {}

    /// The frames in the write-ahead log: each commit appends a frame for every page it changed.
    static func walFrames(_ path: String) throws -> Int {
        let size = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0
        return size <= 32 ? 0 : (size - 32) / (24 + 4096)
    }

    @Test func writesQueuedBehindACommitShareTheNextAndAFailureIsUndoneAlone() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let path = directory.file("usher.sqlite")
        let database = try AppDatabase(path: path)
        let writer = database.writer
        try await writer.write { db in
            try db.execute(sql: "CREATE TABLE t (x INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        }
        try await writer.checkpoint()
        #expect(try Self.walFrames(path) == 0)

        // The first write holds the queue until the other three are waiting behind it.
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        let release = DispatchSemaphore(value: 0)
        let first = Task {
            try await writer.write { db in
                try db.execute(sql: "INSERT INTO t VALUES (1, 'first')")
                startedContinuation.yield()
                release.wait()
            }
        }
        for await _ in started { break }
        let second = Task { try await writer.write { db in try db.execute(sql: "INSERT INTO t VALUES (2, 'second')") } }
        try await eventually { writer.queuedWrites == 1 }
        let refused = Task {
            try await writer.write { db in
                try db.execute(sql: "INSERT INTO t VALUES (3, 'refused')")
                throw Refused()
            }
        }
        try await eventually { writer.queuedWrites == 2 }
        let fourth = Task {
            try await writer.write { db in try db.fetchOne(Int.self, sql: "SELECT count(*) FROM t") ?? -1 }
        }
        try await eventually { writer.queuedWrites == 3 }
        release.signal()

        try await first.value
        try await second.value
        await #expect(throws: Refused.self) { try await refused.value }
        // Run after the refused write was undone: it sees rows 1 and 2 only.
        #expect(try await fourth.value == 2)
        let rows = try await writer.read { db in try db.fetchAll(String.self, sql: "SELECT v FROM t ORDER BY x") }
        #expect(rows == ["first", "second"])
        // Two commits: the first write's, and one for the three behind it (the table's one page each time).
        #expect(try Self.walFrames(path) == 2)
    }
}
