import Testing
import UsherProtocol
import UsherServer

/// Which tokens a peer's rules give it (`[[access.rule]] audience`, `scopes`), and what a request may ask for.
struct TokenGrantTests {
    static let kiosk = PeerProgram(identity: ProgramIdentity(identified: true, executable: "/usr/bin/kiosk-app"))
    static let player = PeerProgram(identity: ProgramIdentity(identified: true, executable: "/usr/bin/player"))

    static func peer(_ program: PeerProgram, uid: UInt32 = 1000) -> PeerCredentials {
        PeerCredentials(uid: uid, gid: uid, pid: 42, program: program)
    }

    static let bank = TokenAudience(audience: "https://bank.example", scopes: ["pay", "balance"])
    static let media = TokenAudience(audience: "https://media.example", scopes: ["read:media"])

    static let policy = AccessPolicy(
        daemonUID: 999,
        rules: [
            AccessRule(.uid(1000), allow: [.read]),
            AccessRule(
                .uid(1000),
                allow: [.token],
                program: ProgramCondition(executable: "/usr/bin/kiosk-app"),
                narrowing: Self.bank
            ),
            AccessRule(
                .uid(1000),
                allow: [.token],
                program: ProgramCondition(executable: "/usr/bin/player"),
                narrowing: Self.media
            ),
        ]
    )

    @Test func aNarrowingRuleGivesItsProgramOnlyItsToken() throws {
        let grant = Self.policy.tokenGrant(for: Self.peer(Self.kiosk))
        #expect(grant == .narrowed([Self.bank]))
        // Asking for nothing: the rule's token.
        #expect(try grant.narrowing(for: TokenAudience()) == Self.bank)
        // Asking for less: fewer scopes, same audience.
        #expect(
            try grant.narrowing(for: TokenAudience(scopes: ["balance"]))
                == TokenAudience(audience: "https://bank.example", scopes: ["balance"])
        )
        #expect(try grant.narrowing(for: TokenAudience(audience: "https://bank.example")) == Self.bank)
    }

    @Test(arguments: [
        ("another audience", TokenAudience(audience: "https://media.example")),
        ("a scope the rule does not list", TokenAudience(scopes: ["pay", "transfer"])),
        ("another program's token", TokenAudience(audience: "https://media.example", scopes: ["read:media"])),
    ])
    func askingForMoreThanTheRuleGivesIsDenied(_ what: String, _ requested: TokenAudience) {
        let grant = Self.policy.tokenGrant(for: Self.peer(Self.kiosk))
        #expect(throws: ResponseError.self, "\(what)") { try grant.narrowing(for: requested) }
        do {
            _ = try grant.narrowing(for: requested)
        } catch {
            #expect(error.code == .permissionDenied)
            #expect(error.message.contains("https://bank.example"), "names what the rules give: \(error.message)")
        }
    }

    @Test func peersWithoutNarrowingGetTheSessionTokenOrWhatTheyAskFor() throws {
        // Root, and a program no narrowing rule matches (here: any program of uid 1001 with a plain token rule).
        let policy = AccessPolicy(
            daemonUID: 999,
            rules: Self.policy.rules + [AccessRule(.uid(1001), allow: [.token])]
        )
        for peer in [Self.peer(Self.kiosk, uid: 0), Self.peer(.unidentified, uid: 1001)] {
            let grant = policy.tokenGrant(for: peer)
            #expect(grant == .full)
            #expect(try grant.narrowing(for: TokenAudience()) == nil)
            #expect(try grant.narrowing(for: Self.media) == Self.media)
        }
    }

    @Test func aPlainRuleOnEverySeatLiftsNarrowingButASeatScopedOneDoesNot() {
        let plain = AccessRule(.uid(1000), allow: [.token])
        let seatScoped = AccessRule(.uid(1000), allow: [.token], seats: ["seat1"])
        let everywhere = AccessPolicy(daemonUID: 999, rules: Self.policy.rules + [plain])
        #expect(everywhere.tokenGrant(for: Self.peer(Self.kiosk)) == .full)
        let onOneSeat = AccessPolicy(daemonUID: 999, rules: Self.policy.rules + [seatScoped])
        #expect(onOneSeat.tokenGrant(for: Self.peer(Self.kiosk)) == .narrowed([Self.bank]))
    }

    @Test func anUnidentifiedProgramMatchesNoNarrowingRule() {
        // It matches no rule with a program condition at all: no token.
        #expect(Self.policy.tokenGrant(for: Self.peer(.unidentified)) == .full)
        #expect(Self.policy.scope(of: .token, for: Self.peer(.unidentified)) == nil)
    }

    @Test func tokensNameTheProgramTheyAreFor() {
        #expect(Self.kiosk.authorizedParty == "/usr/bin/kiosk-app")
        let service = PeerProgram(
            identity: ProgramIdentity(identified: true, executable: "/usr/bin/kiosk-app", unit: "kiosk-app.service")
        )
        #expect(service.authorizedParty == "kiosk-app.service")
        let userApp = PeerProgram(
            identity: ProgramIdentity(
                identified: true,
                executable: "/usr/bin/player",
                unit: "user@1000.service",
                userUnit: "app-player.scope"
            )
        )
        #expect(userApp.authorizedParty == "app-player.scope")
        #expect(PeerProgram.unidentified.authorizedParty == nil)
    }
}
