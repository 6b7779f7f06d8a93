import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// The session store, on a database file observed through a second connection (as `sqlite3` would see it): what a
/// commit writes, what a load reads back.
@Suite(.timeLimit(.minutes(1)))
struct SessionStoreTests {
    /// A database file in a fresh directory, and a second connection to it whose triggers note every column an
    /// `UPDATE` names (an update trigger `OF column` fires when the statement sets that column, changed or not) and
    /// every row inserted or deleted.
    final class Fixture {
        let directory: TestDirectory
        let database: AppDatabase
        let observer: Connection

        init(cipher: TokenCipher? = nil) throws {
            self.directory = try TestDirectory()
            let path = self.directory.file("usher.sqlite")
            self.database = try AppDatabase(path: path, cipher: cipher)
            self.observer = try Connection(path: path)
            try self.observer.write { db in
                try db.execute(sql: "CREATE TABLE written (what TEXT NOT NULL)")
                for column in try db.columns(in: "user") {
                    try db.execute(
                        sql: """
                            CREATE TRIGGER written_\(column) AFTER UPDATE OF \(column) ON user
                            BEGIN INSERT INTO written (what) VALUES ('\(column)'); END
                            """
                    )
                }
                try db.execute(
                    sql: """
                        CREATE TRIGGER written_insert AFTER INSERT ON user
                        BEGIN INSERT INTO written (what) VALUES ('insert'); END;
                        CREATE TRIGGER written_delete AFTER DELETE ON user
                        BEGIN INSERT INTO written (what) VALUES ('delete'); END;
                        """
                )
            }
        }

        deinit { self.directory.remove() }

        /// What the commits since the last call wrote to the `user` table, sorted.
        func written() throws -> [String] {
            try self.observer.write { db in
                defer { try? db.execute(sql: "DELETE FROM written") }
                return try db.fetchAll(String.self, sql: "SELECT what FROM written ORDER BY what")
            }
        }

        /// A column of a user's row, exactly as stored.
        func stored(_ column: String, of id: String) throws -> String? {
            try self.observer.read { db in
                try db.fetchOne(String.self, sql: "SELECT \(column) FROM user WHERE id = ?", arguments: [id])
            }
        }

        func commit(saving user: User, previous: User? = nil, generation: Int64? = nil) async throws {
            try await self.database.commit(
                SessionChange(
                    generation: generation,
                    saved: [user],
                    deleted: [],
                    previous: previous.map { [$0.id: $0] } ?? [:]
                )
            )
        }
    }

    static let key = TokenCipher(keyBytes: Array(repeating: 0x5A, count: 32))
    /// A session's DPoP key.
    static let sessionKey = DPoPKey.generate()

    static func time(_ seconds: Int64) -> Timestamp {
        Timestamp(millisecondsSinceEpoch: 1_760_000_000_000 + seconds * 1000)
    }

    /// A logged-in user with every field set.
    static func user(_ subject: String = "ann", added: Int64 = 1) -> User {
        User(
            id: User.id(provider: "local", subject: subject),
            provider: "local",
            subject: subject,
            kind: "email_password",
            email: "\(subject)@example.com",
            name: "\(subject.capitalized) Example",
            state: .loggedIn,
            addedGeneration: added,
            createdAt: Self.time(0),
            lastLoginAt: Self.time(1),
            lastActiveAt: Self.time(2),
            activeGeneration: added,
            tokens: TokenSet(
                accessToken: "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ\(subject)In0.c2lnbmF0dXJl",
                issuedAt: Self.time(1),
                expiresAt: Self.time(901),
                refreshToken: "rt_\(subject)_1",
                refreshExpiresAt: Self.time(86_401)
            ),
            providerData: #"{"session":"\#(subject)"}"#
        )
    }

    @Test func aChangeOfLastActiveAtWritesOnlyThatColumn() async throws {
        let fixture = try Fixture()
        let ann = Self.user()
        try await fixture.commit(saving: ann, generation: 1)
        #expect(try fixture.written() == ["insert"])

        var active = ann
        active.lastActiveAt = Self.time(60)
        try await fixture.commit(saving: active, previous: ann)
        #expect(try fixture.written() == ["last_active_at"])
        #expect(try await fixture.database.loadSessions().users == [active])

        // A saved user identical to its previous version writes nothing at all.
        try await fixture.commit(saving: active, previous: active)
        #expect(try fixture.written() == [])
    }

    @Test func withACipherUnchangedSecretsKeepTheirStoredCiphertext() async throws {
        let fixture = try Fixture(cipher: Self.key)
        let ann = Self.user()
        try await fixture.commit(saving: ann, generation: 1)
        let access = try #require(try fixture.stored("access_token", of: ann.id))
        let refresh = try #require(try fixture.stored("refresh_token", of: ann.id))
        let data = try #require(try fixture.stored("provider_data", of: ann.id))
        #expect([access, refresh, data].allSatisfy { $0.hasPrefix("enc1:") })
        #expect(!access.contains("eyJ") && !refresh.contains("rt_ann"))
        _ = try fixture.written()

        // A switch moves the activity columns only: the sealed columns are not rewritten, byte for byte.
        var switched = ann
        switched.lastActiveAt = Self.time(60)
        switched.activeGeneration = 7
        try await fixture.commit(saving: switched, previous: ann, generation: 7)
        #expect(try fixture.written() == ["active_generation", "last_active_at"])
        #expect(try fixture.stored("access_token", of: ann.id) == access)
        #expect(try fixture.stored("refresh_token", of: ann.id) == refresh)
        #expect(try fixture.stored("provider_data", of: ann.id) == data)

        // A refresh that keeps the refresh token reseals the access token only.
        var refreshed = switched
        refreshed.tokens?.accessToken = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhbm4iLCJuIjoyfQ.c2lnbmF0dXJlMg"
        refreshed.tokens?.issuedAt = Self.time(900)
        refreshed.tokens?.expiresAt = Self.time(1800)
        try await fixture.commit(saving: refreshed, previous: switched)
        #expect(
            try fixture.written() == ["access_token", "access_token_expires_at", "access_token_issued_at"]
        )
        let newAccess = try #require(try fixture.stored("access_token", of: ann.id))
        #expect(newAccess != access && newAccess.hasPrefix("enc1:"))
        #expect(try fixture.stored("refresh_token", of: ann.id) == refresh)
        #expect(try await fixture.database.loadSessions().users == [refreshed])

        // Another connection with the key reads every secret back in plaintext.
        let reopened = try AppDatabase(path: fixture.directory.file("usher.sqlite"), cipher: Self.key)
        #expect(try await reopened.loadSessions().users == [refreshed])
    }

    @Test func plaintextSecretsAreSealedWhenLoadedWithAKey() async throws {
        // Stored before encryption was turned on.
        let fixture = try Fixture()
        let ann = Self.user()
        try await fixture.commit(saving: ann, generation: 1)
        #expect(try fixture.stored("refresh_token", of: ann.id) == "rt_ann_1")

        let keyed = try AppDatabase(path: fixture.directory.file("usher.sqlite"), cipher: Self.key)
        #expect(try await keyed.loadSessions().users == [ann])
        // Sealed at once, not at the next change of each secret (a change writes only the columns that changed).
        for column in ["access_token", "refresh_token", "provider_data"] {
            #expect(try fixture.stored(column, of: ann.id)?.hasPrefix("enc1:") == true, "\(column)")
        }
        #expect(try await keyed.loadSessions().users == [ann])
        await #expect(throws: StoreError.self) { try await fixture.database.loadSessions() }
    }

    @Test(arguments: [false, true])
    func everyFieldRoundTrips(encrypted: Bool) async throws {
        let fixture = try Fixture(cipher: encrypted ? Self.key : nil)
        let ann = Self.user("ann", added: 1)
        let bob = Self.user("bob", added: 2)
        try await fixture.database.commit(SessionChange(generation: 2, saved: [bob, ann], deleted: []))
        var loaded = try await fixture.database.loadSessions()
        #expect(loaded.generation == 2)
        // In the order they were added, whatever order they were saved in.
        #expect(loaded.users == [ann, bob])

        // Every field but the state (still logged in) changed at once: every column but those two is written, and
        // reads back.
        let changed = User(
            id: ann.id,
            provider: "corp",
            subject: "ann-2",
            kind: "oidc",
            email: "ann@corp.example",
            name: "Ann Changed",
            state: .loggedIn,
            addedGeneration: 3,
            createdAt: Self.time(10),
            lastLoginAt: Self.time(11),
            lastActiveAt: Self.time(12),
            activeGeneration: 4,
            tokens: TokenSet(
                accessToken: "other-access",
                issuedAt: Self.time(11),
                expiresAt: Self.time(111),
                refreshToken: "other-refresh",
                refreshExpiresAt: Self.time(1111),
                dpopKey: Self.sessionKey
            ),
            providerData: #"{"id_token":"x"}"#,
            otherIdentities: [Identity(provider: "corp", kind: "oidc", subject: "ann-old")],
            sessionUID: 1000,
            profile: UserClaims(["name": "Ann Changed", "locale": "en-GB"]),
            customData: UserClaims(["groups": ["staff"]])
        )
        _ = try fixture.written()
        try await fixture.commit(saving: changed, previous: ann, generation: 4)
        let columns = try fixture.observer.read { db in try db.columns(in: "user") }
        #expect(try fixture.written() == columns.filter { $0 != "id" && $0 != "state" }.sorted())
        loaded = try await fixture.database.loadSessions()
        #expect(loaded.users == [bob, changed])
        #expect(loaded.generation == 4)

        // Logged out, with every optional field cleared: the columns become NULL.
        var cleared = changed
        cleared.state = .loggedOut
        cleared.email = nil
        cleared.name = nil
        cleared.lastLoginAt = nil
        cleared.lastActiveAt = nil
        cleared.tokens = nil
        cleared.providerData = nil
        try await fixture.commit(saving: cleared, previous: changed, generation: 5)
        #expect(
            try fixture.written() == [
                "access_token", "access_token_expires_at", "access_token_issued_at", "dpop_key", "email",
                "last_active_at",
                "last_login_at", "name", "provider_data", "refresh_token", "refresh_token_expires_at", "state",
            ]
        )
        #expect(try fixture.stored("access_token", of: ann.id) == nil)
        #expect(try fixture.stored("provider_data", of: ann.id) == nil)
        #expect(try await fixture.database.loadSessions().users == [bob, cleared])
    }

    @Test func deletesRemoveTheRowsByID() async throws {
        let fixture = try Fixture()
        let ann = Self.user("ann", added: 1)
        let bob = Self.user("bob", added: 2)
        let cid = Self.user("cid", added: 3)
        try await fixture.database.commit(SessionChange(generation: 3, saved: [ann, bob, cid], deleted: []))
        _ = try fixture.written()

        try await fixture.database.commit(SessionChange(generation: 4, saved: [], deleted: [ann.id, cid.id]))
        #expect(try fixture.written() == ["delete", "delete"])
        let loaded = try await fixture.database.loadSessions()
        #expect(loaded.users == [bob])
        #expect(loaded.generation == 4)

        // A user removed and saved again in later changes is inserted anew.
        try await fixture.commit(saving: ann, generation: 5)
        #expect(try fixture.written() == ["insert"])
        #expect(try await fixture.database.loadSessions().users == [ann, bob])
    }
}
