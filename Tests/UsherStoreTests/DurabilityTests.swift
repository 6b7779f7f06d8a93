import Foundation
import Testing
import UsherTestSupport

@testable import UsherStore

/// A write the daemon acknowledged survives a power cut, not only a crash: the connection it writes with syncs the WAL
/// at every commit (`synchronous = FULL`, 2), in WAL mode.
///
/// GRDB's `DatabasePool`, which the store used up to 0.1.0, set `synchronous = NORMAL` after the store's own `FULL`
/// when it turned WAL on, so a commit was not synced: a crash of the daemon lost nothing, a power cut could. A test that
/// kills the daemon cannot see that (the kernel still has the pages); this one reads the setting.
@Suite(.timeLimit(.minutes(1)))
struct DurabilityTests {
    @Test func theDaemonsConnectionSyncsEveryCommit() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let database = try AppDatabase(path: directory.file("usher.sqlite"))
        let settings = try await database.writer.read { connection in
            (
                try connection.fetchOne(Int.self, sql: "PRAGMA synchronous"),
                try connection.fetchOne(String.self, sql: "PRAGMA journal_mode")
            )
        }
        #expect(settings.0 == 2)
        #expect(settings.1 == "wal")
    }
}
