import Testing
import UsherCore
import UsherProtocol
import UsherProviders
import UsherStore
import UsherTestSupport

/// The profile of an email/password account: what `update_profile` accepts, and that later logins carry it.
@Suite(.timeLimit(.minutes(1)))
struct LocalProfileTests {
    @Test func valuesAreCheckedAsUpdateProfileDocumentsThem() throws {
        #expect(UserClaims.isWebURL("https://example.com/a.png"))
        #expect(UserClaims.isWebURL("HTTPS://cdn.example.com"))
        #expect(UserClaims.isWebURL("https://cdn.example.com/a%20b.png?size=64&x=(1)#top"))
        for bad in [
            "http://example.com/a.png", "https://", "https:///path", "https://user@host/x", "https://a b", "x",
            #"https://example.com/"><script>"#, "https://example.com/a\\b", "https://exämple.com/",
            "javascript:alert(1)",
        ] {
            #expect(!UserClaims.isWebURL(bad), "\(bad)")
        }
        #expect(UserClaims.isWebURL("http://example.com/a.png", allowingHTTP: true))
        #expect(!UserClaims.isWebURL("file:///etc/passwd", allowingHTTP: true))
        for good in ["en", "en-GB", "pt-BR", "zh-Hant-TW", "sr-Latn-RS", "de-CH-1996"] {
            #expect(LocalProvider.isLanguageTag(good), "\(good)")
        }
        for bad in ["e", "en_GB", "en-", "-en", "english please", "en-GBGBGBGBGB", "12", "ën"] {
            #expect(!LocalProvider.isLanguageTag(bad), "\(bad)")
        }
        #expect(try LocalProvider.checkedProfileValue("name", "Ann") == "Ann")
        #expect(try LocalProvider.checkedProfileValue("name", "") == .null)
        #expect(try LocalProvider.checkedProfileValue("locale", .null) == .null)
        #expect(throws: ProviderError.self) { try LocalProvider.checkedProfileValue("name", "Ann\nSmith") }
        #expect(throws: ProviderError.self) { try LocalProvider.checkedProfileValue("name", "   ") }
        #expect(throws: ProviderError.self) {
            try LocalProvider.checkedProfileValue("name", "\u{200B}\u{200D}\u{FEFF}")
        }
        #expect(throws: ProviderError.self) {
            try LocalProvider.checkedProfileValue("name", .string(String(repeating: "a", count: 257)))
        }
        #expect(throws: ProviderError.self) { try LocalProvider.checkedProfileValue("email", "a@example.com") }
        #expect(throws: ProviderError.self) { try LocalProvider.checkedProfileValue("picture", 3) }
    }

    @Test func theNextLoginCarriesTheProfileItsOwnerSet() async throws {
        try await LocalProviderTests.withProvider { fixture in
            let provider = fixture.provider
            _ = try await provider.register(email: "ann@example.com", password: "secret1")
            let credentials: [String: JSONValue] = [
                "type": "email_password", "email": "ann@example.com", "password": "secret1",
            ]
            let first = try await provider.authenticate(credentials: credentials)
            #expect(first.profile == UserClaims(["email": "ann@example.com"]))

            let (profile, write) = try await provider.updateProfile(
                subject: first.subject,
                changes: ["name": "Ann Smith", "locale": "en-GB"]
            )
            #expect(profile.claims == ["email": "ann@example.com", "name": "Ann Smith", "locale": "en-GB"])
            // Nothing is stored until the registry commits the write with its change.
            #expect(try await provider.authenticate(credentials: credentials).profile == first.profile)
            try await fixture.database.commit(
                SessionChange(generation: nil, saved: [], deleted: [], pendingWrites: [write])
            )

            let second = try await provider.authenticate(credentials: credentials)
            #expect(second.profile == profile)
            #expect(second.name == "Ann Smith")
            let read = try await provider.readProfile(LocalProviderTests.session(second))
            #expect(read.profile == profile)

            // Anonymous users have no account to keep a profile.
            let guest = try await provider.authenticate(credentials: ["type": "anonymous"])
            await #expect(throws: ProviderError.self) {
                try await provider.updateProfile(subject: guest.subject, changes: ["name": "Guest"])
            }
        }
    }
}
