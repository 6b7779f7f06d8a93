import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// A session's DPoP key is stored in its user's row, sealed like the tokens, and comes back as the same key.
@Suite("DPoP key store")
struct DPoPKeyStoreTests {
    static func boundUser(_ key: DPoPKey) -> User {
        var user = SessionStoreTests.user()
        user.tokens?.dpopKey = key
        return user
    }

    @Test func theKeyIsSealedWithTheTokensAndReadBack() async throws {
        let fixture = try SessionStoreTests.Fixture(cipher: SessionStoreTests.key)
        let key = DPoPKey.generate()
        let ann = Self.boundUser(key)
        try await fixture.commit(saving: ann, generation: 1)
        let stored = try #require(try fixture.stored("dpop_key", of: ann.id))
        #expect(stored.hasPrefix("enc1:"))
        #expect(!stored.contains(key.stored))
        let loaded = try #require(try await fixture.database.loadSessions().users.first)
        #expect(loaded.tokens?.dpopKey == key)
        #expect(loaded.tokens?.dpopKey?.thumbprint == key.thumbprint)
        #expect(loaded.tokens?.tokenType == "DPoP")

        // A refresh keeps the key: its column is not written again.
        _ = try fixture.written()
        var refreshed = ann
        refreshed.tokens?.accessToken = "eyJhbGciOiJFUzI1NiJ9.eyJuIjoyfQ.c2ln"
        try await fixture.commit(saving: refreshed, previous: ann)
        #expect(try fixture.written() == ["access_token"])
        #expect(try fixture.stored("dpop_key", of: ann.id) == stored)

        // Logging out drops it with the tokens.
        var out = refreshed
        out.state = .loggedOut
        out.tokens = nil
        try await fixture.commit(saving: out, previous: refreshed)
        #expect(try fixture.stored("dpop_key", of: ann.id) == nil)
    }

    @Test func withoutACipherThePlaintextKeyIsSealedWhenAKeyIsConfigured() async throws {
        let fixture = try SessionStoreTests.Fixture()
        let key = DPoPKey.generate()
        let ann = Self.boundUser(key)
        try await fixture.commit(saving: ann, generation: 1)
        #expect(try fixture.stored("dpop_key", of: ann.id) == key.stored)

        let keyed = try AppDatabase(path: fixture.directory.file("usher.sqlite"), cipher: SessionStoreTests.key)
        #expect(try await keyed.loadSessions().users.first?.tokens?.dpopKey == key)
        #expect(try fixture.stored("dpop_key", of: ann.id)?.hasPrefix("enc1:") == true)
    }

    @Test func aDamagedKeyIsALoadErrorNotABearerSession() async throws {
        let fixture = try SessionStoreTests.Fixture()
        let ann = Self.boundUser(DPoPKey.generate())
        try await fixture.commit(saving: ann, generation: 1)
        try fixture.observer.write { db in
            try db.execute(sql: "UPDATE user SET dpop_key = 'not-a-key' WHERE id = ?", arguments: [ann.id])
        }
        await #expect(throws: StoreError.self) { try await fixture.database.loadSessions() }
    }

    @Test func theKeyNeverShowsInADescription() {
        let key = DPoPKey.generate()
        for text in [
            String(describing: key), String(reflecting: key), "\(Mirror(reflecting: key).children.map(\.value))",
        ] {
            #expect(!text.contains(key.stored))
            #expect(text.contains(key.thumbprint))
        }
    }
}
