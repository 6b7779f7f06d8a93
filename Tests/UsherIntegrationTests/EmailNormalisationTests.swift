import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// One email, one account: `josé@ex.com` typed with a precomposed é (NFC, as most keyboards send it) and with an e and
/// a combining accent (NFD, as some systems send it) look the same everywhere, so they must be the same account.
@Suite(.integrationHangGuard)
struct EmailNormalisationTests {
    static let composed = "jos\u{E9}@ex.com"
    static let decomposed = "jose\u{301}@ex.com"

    @Test func canonicallyEquivalentEmailsAreOneAccount() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let registered = try await client.result(
                "register",
                ["email": .string(Self.decomposed), "password": "secret123"]
            )
            // Stored and shown composed (NFC), whatever form it was typed in.
            #expect(registered["email"]?.stringValue.map { Array($0.utf8) } == Array(Self.composed.utf8))
            for email in [Self.composed, "JOSE\u{301}@EX.COM", "Jos\u{C9}@Ex.com"] {
                #expect(
                    try await client.errorCode("register", ["email": .string(email), "password": "other1234"])
                        == "account_exists",
                    "\(Array(email.unicodeScalars))"
                )
            }
            var ids: Set<String> = []
            for email in [Self.composed, Self.decomposed, "JOS\u{C9}@EX.COM"] {
                let login = try await client.result(
                    "login",
                    ["credentials": ["type": "email_password", "email": .string(email), "password": "secret123"]]
                )
                ids.insert(try #require(login["user"]?["id"]?.stringValue))
                #expect(login["user"]?["email"]?.stringValue.map { Array($0.utf8) } == Array(Self.composed.utf8))
            }
            #expect(ids.count == 1)
            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            #expect(users.count == 1)
        }
    }
}
