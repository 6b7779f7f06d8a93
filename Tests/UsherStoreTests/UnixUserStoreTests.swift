import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// Unix accounts through the allocating store on a database file: allocated in the transaction that adds the user,
/// given back when that transaction fails, kept for good (a removed user's uid is never another's), and loaded again.
@Suite(.timeLimit(.minutes(1)))
struct UnixUserStoreTests {
    static func directory(
        range: ClosedRange<UInt32> = 60_000...60_009,
        local: LocalAccountNames = LocalAccountNames()
    ) -> UnixUserDirectory {
        var settings = UnixUserSettings()
        settings.uidRange = range
        // The store does not encode records: the server does (UserDatabaseRecords, tested on the real daemon).
        return UnixUserDirectory(settings: settings, localAccounts: { local }, encode: { _ in ([], []) })
    }

    static func store(_ database: AppDatabase, _ directory: UnixUserDirectory) -> UnixUserAllocatingStore {
        UnixUserAllocatingStore(database: database, directory: directory, now: { SessionStoreTests.time(0) })
    }

    static func add(_ store: UnixUserAllocatingStore, _ users: User...) async throws {
        try await store.commit(SessionChange(generation: 1, saved: users, deleted: []))
    }

    @Test func newUsersGetTheNextFreeUIDAndAUniqueName() async throws {
        let files = try TestDirectory()
        defer { files.remove() }
        let database = try AppDatabase(path: files.file("usher.sqlite"))
        // 60000 and the name "ann" are the device's own.
        let directory = Self.directory(local: LocalAccountNames(names: ["ann"], ids: [60_000]))
        let store = Self.store(database, directory)
        _ = try await store.loadSessions()
        var ann = SessionStoreTests.user("ann")
        ann.profile = UserClaims(["preferred_username": "Ann"])
        var other = SessionStoreTests.user("ann.other")
        other.email = "ann@example.org"
        try await Self.add(store, ann, other, SessionStoreTests.user("root"))
        #expect(directory.user(named: "ann2")?.allocation.uid == 60_001)
        #expect(directory.user(named: "ann3")?.allocation.uid == 60_002)
        // A reserved name gets a number.
        #expect(directory.user(named: "root2")?.allocation.uid == 60_003)
        #expect(directory.user(named: "ann") == nil)
        #expect(directory.user(uid: 60_001)?.realName == "Ann Example")
        // Written: a new directory on the same file serves the same accounts.
        let reopened = Self.directory()
        _ = try await Self.store(database, reopened).loadSessions()
        #expect(reopened.allocation(of: ann.id)?.uid == 60_001)
    }

    @Test func aRemovedUsersUIDIsNeverAnotherUsers() async throws {
        let database = try AppDatabase.inMemory()
        let directory = Self.directory()
        let store = Self.store(database, directory)
        _ = try await store.loadSessions()
        let bo = SessionStoreTests.user("bo")
        try await Self.add(store, bo)
        try await store.commit(SessionChange(generation: 2, saved: [], deleted: [bo.id], previous: [bo.id: bo]))
        #expect(directory.user(uid: 60_000) == nil)
        try await Self.add(store, SessionStoreTests.user("cy"))
        #expect(directory.user(named: "cy")?.allocation.uid == 60_001)
        // Back on the device: its own uid and name again.
        try await Self.add(store, bo)
        #expect(directory.user(uid: 60_000)?.allocation.name == "bo")
        // Anonymous guests get none.
        var guest = SessionStoreTests.user("guest")
        guest.kind = CredentialType.anonymous
        try await Self.add(store, guest)
        #expect(directory.allocation(of: guest.id) == nil)
    }

    @Test func aFailedCommitGivesTheAllocationBack() async throws {
        let database = try AppDatabase.inMemory()
        let directory = Self.directory()
        let store = Self.store(database, directory)
        _ = try await store.loadSessions()
        let dee = SessionStoreTests.user("dee")
        // A pending write that cannot be done (the account is gone) fails the whole change.
        var failing = SessionChange(generation: 1, saved: [dee], deleted: [])
        failing.pendingWrites = [LocalProfileWrite(provider: "local", accountID: "gone", profile: .empty)]
        await #expect(throws: (any Error).self) { try await store.commit(failing) }
        #expect(directory.allocation(of: dee.id) == nil)
        #expect(try await database.unixUserAllocations().isEmpty)
        try await Self.add(store, SessionStoreTests.user("eve"))
        #expect(directory.user(named: "eve")?.allocation.uid == 60_000)
    }

    @Test func usersAlreadyThereGetAccountsAtLoadAndAFullRangeGivesNone() async throws {
        let database = try AppDatabase.inMemory()
        try await database.commit(
            SessionChange(
                generation: 1,
                saved: [SessionStoreTests.user("fay"), SessionStoreTests.user("gus", added: 2)],
                deleted: []
            )
        )
        let directory = Self.directory(range: 60_000...60_000)
        _ = try await Self.store(database, directory).loadSessions()
        #expect(directory.users().map(\.allocation.name) == ["fay"])
        #expect(try await database.unixUserAllocations().count == 1)
    }
}
