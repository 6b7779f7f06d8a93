import Crypto
import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Narrowed tokens of the local provider (docs/least-privilege.md): programs whose `[[access.rule]]` names an
/// `audience` and `scopes` get a token signed for that audience and those scopes, naming them (`azp`), never the
/// session's full token. The programs are copies of the CLI at different paths, run as nobody (root and the daemon's
/// uid get every token whatever the rules say), so the tests need root.
@Suite(.integrationHangGuard, .enabled(if: OtherUser.unavailableReason == nil, "needs root to run clients as nobody"))
struct NarrowedTokenTests {
    static let nobody = "uid = 65534\n"

    /// The kiosk of docs/least-privilege.md: a banking app, a media player and a crash reporter, each with its token.
    static func kioskRules(_ directory: TestDirectory) -> String {
        let programs = directory.file("programs")
        return """
            [[access.rule]]
            \(Self.nobody)allow = ["read"]

            [[access.rule]]
            \(Self.nobody)executable = "\(programs)/bank"
            allow = ["token"]
            audience = "https://bank.example"
            scopes = ["balance", "pay"]

            [[access.rule]]
            \(Self.nobody)executable = "\(programs)/player"
            allow = ["token"]
            audience = "https://media.example"
            scopes = ["read:media"]

            [[access.rule]]
            \(Self.nobody)executable = "\(programs)/reporter"
            allow = ["token"]
            scopes = ["crash:write"]

            """
    }

    /// `usher token ARGS --json` run as nobody by `program`: the answer, or the failure's stderr.
    static func token(
        _ program: String,
        _ arguments: [String] = [],
        _ daemon: DaemonProcess
    ) async throws -> Result<JSONValue, TestSupportError> {
        let output = try await ProgramIdentificationTests.asNobody(program, ["token", "--json"] + arguments, daemon)
        guard output.status == 0 else { return .failure(TestSupportError(output.stderr)) }
        return .success(try JSONDecoder().decode(JSONValue.self, from: Data(output.stdout.utf8)))
    }

    static func claims(_ answer: JSONValue) throws -> JSONValue {
        try DPoPTests.decodePart(try #require(answer["access_token"]?.stringValue), 1)
    }

    @Test func threeProgramsOfAKioskGetThreeDifferentTokens() async throws {
        let directory = try TestDirectory()
        let daemon = try DaemonProcess(
            config: "[daemon]\nsocket_mode = \"0666\"\n" + Self.kioskRules(directory),
            directory: directory
        )
        chmod(directory.path, 0o711)
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let programs = try ProgramIdentificationTests.programs(in: daemon, ["bank", "player", "reporter"])
            let root = try daemon.connect()
            let user = try await DPoPTests.logIn(root, "kiosk@example.com")
            let full = try await root.result("access_token")
            let fullClaims = try Self.claims(full)
            #expect(full["audience"] == nil && full["scopes"] == nil)
            #expect(fullClaims["aud"] == nil && fullClaims["azp"] == nil)

            let bank = try await Self.token(programs[0], [], daemon).get()
            let player = try await Self.token(programs[1], [], daemon).get()
            let reporter = try await Self.token(programs[2], [], daemon).get()
            #expect(bank["audience"] == "https://bank.example")
            #expect(bank["scopes"] == ["balance", "pay"])
            #expect(player["audience"] == "https://media.example")
            #expect(player["scopes"] == ["read:media"])
            #expect(reporter["audience"] == nil)
            #expect(reporter["scopes"] == ["crash:write"])
            let tokens = [bank, player, reporter, full].compactMap { $0["access_token"]?.stringValue }
            #expect(Set(tokens).count == 4, "four different tokens")

            for (answer, program) in zip([bank, player, reporter], programs) {
                let claims = try Self.claims(answer)
                #expect(claims["sub"]?.stringValue == user)
                #expect(claims["azp"]?.stringValue == program, "the token names the program it is for")
                #expect(
                    claims["scope"]?.stringValue
                        == answer["scopes"]?.arrayValue?.compactMap(\.stringValue)
                        .joined(separator: " ")
                )
                #expect(claims["aud"] == answer["audience"])
                // No later than the session's own token.
                let exp = try #require(claims["exp"]?.intValue)
                #expect(exp <= (try #require(fullClaims["exp"]?.intValue)))
                #expect(answer["user_id"]?.stringValue == user)
            }

            // A program may ask for less than its rule gives, never more, and never another program's token.
            let balanceOnly = try await Self.token(programs[0], ["--scope", "balance"], daemon).get()
            #expect(balanceOnly["scopes"] == ["balance"])
            #expect(try Self.claims(balanceOnly)["scope"] == "balance")
            #expect(try Self.claims(balanceOnly)["aud"] == "https://bank.example")
            for arguments in [["--scope", "transfer"], ["--audience", "https://media.example"]] {
                guard case .failure(let refused) = try await Self.token(programs[0], arguments, daemon) else {
                    Issue.record("\(arguments) was given a token")
                    continue
                }
                #expect(refused.description.contains("permission_denied"), "\(refused.description)")
                #expect(refused.description.contains("https://bank.example"), "\(refused.description)")
            }
            // The same program asking again gets the token it holds.
            let again = try await Self.token(programs[0], [], daemon).get()
            #expect(again["access_token"] == bank["access_token"])
            #expect(!daemon.log.contains(try #require(bank["access_token"]?.stringValue)))

            // A logout ends the narrowed tokens with the session; the next login's are new ones.
            _ = try await root.result("logout")
            guard case .failure(let loggedOut) = try await Self.token(programs[0], [], daemon) else {
                Issue.record("a token after logout")
                return
            }
            #expect(loggedOut.description.contains("no_active_user"), "\(loggedOut)")
            #expect(try await DPoPTests.logIn(root, "kiosk@example.com", register: false) == user)
            let next = try await Self.token(programs[0], [], daemon).get()
            #expect(next["access_token"] != bank["access_token"])
            #expect(try Self.claims(next)["aud"] == "https://bank.example")
        }
    }

    /// A rule with an `audience` and no `scopes`: its program's token has no scope claim, and the program cannot choose
    /// one (issue 36 item 14: it chose `admin`).
    @Test func aRuleWithoutScopesGivesNoScopeOfTheProgramsChoosing() async throws {
        let directory = try TestDirectory()
        let rules = """
            [daemon]
            socket_mode = "0666"

            [[access.rule]]
            \(Self.nobody)executable = "\(directory.file("programs"))/shop"
            allow = ["token"]
            audience = "https://shop.example"

            """
        let daemon = try DaemonProcess(config: rules, directory: directory)
        chmod(directory.path, 0o711)
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let shop = try #require(try ProgramIdentificationTests.programs(in: daemon, ["shop"]).first)
            let root = try daemon.connect()
            _ = try await DPoPTests.logIn(root, "shop@example.com")

            let plain = try await Self.token(shop, [], daemon).get()
            #expect(plain["audience"] == "https://shop.example")
            #expect(plain["scopes"] == nil)
            #expect(try Self.claims(plain)["scope"] == nil)
            #expect(try Self.claims(plain)["aud"] == "https://shop.example")

            for arguments in [["--scope", "admin"], ["--audience", "https://shop.example", "--scope", "admin"]] {
                guard case .failure(let refused) = try await Self.token(shop, arguments, daemon) else {
                    Issue.record("\(arguments): a token with a scope the program chose")
                    continue
                }
                #expect(refused.description.contains("permission_denied"), "\(refused.description)")
                #expect(refused.description.contains("no scopes"), "\(refused.description)")
            }
        }
    }
}
