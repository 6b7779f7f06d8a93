import Testing
import UsherCore
import UsherProtocol

/// Claims with control characters never become a stored user.
@Suite(.timeLimit(.minutes(1)))
struct ClaimTests {
    static func authentication(
        subject: String = "s-1",
        email: String? = "ann@example.com",
        name: String? = nil
    )
        -> Authentication
    {
        let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        return Authentication(
            subject: subject,
            kind: "jwt",
            email: email,
            name: name,
            tokens: TokenSet(accessToken: "a", issuedAt: now, expiresAt: now, refreshToken: "r", refreshExpiresAt: nil)
        )
    }

    @Test(arguments: ["\n", "\r", "\u{0}", "\u{1B}", "\u{85}", "\u{7F}", "\u{2028}", "\u{202E}"])
    func identifiersWithAControlCharacterAreRefusedAndNamesAreCleaned(control: String) throws {
        #expect(throws: ProviderError.self) { try Self.authentication(subject: "s\(control)1").checkedClaims() }
        #expect(throws: ProviderError.self) {
            try Self.authentication(email: "m@x\(control)WATCHDOG=trigger").checkedClaims()
        }
        let named = try Self.authentication(name: "Ann\(control)\(control)Smith\(control)").checkedClaims()
        #expect(named.name == "Ann Smith")
        #expect(try Self.authentication(name: "\(control)").checkedClaims().name == nil)
    }

    @Test func cleanClaimsAreKeptAsTheyAre() throws {
        let checked = try Self.authentication(email: "zoë@example.com", name: "Zoë O'Brien").checkedClaims()
        #expect(checked.email == "zoë@example.com")
        #expect(checked.name == "Zoë O'Brien")
        #expect(checked.subject == "s-1")
    }

    @Test func aRefusedLoginRevokesTheSessionTheProviderOpenedAndStoresNothing() async throws {
        let harness = try await Harness()
        await #expect(throws: ProviderError.self) {
            try await harness.registry.login(provider: nil, credentials: Harness.credentials("m@x\nSTOPPING=1"))
        }
        #expect(harness.provider.revokedRefreshTokens.count == 1)
        #expect(await harness.registry.listUsers().users.isEmpty)
        #expect(await harness.registry.currentGeneration == 0)
    }
}
