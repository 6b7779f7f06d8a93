import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `list_identities` (`usher identities`) against the real daemon: the method added as the proof of
/// docs/architecture.md's "Adding a method", declared once in the interface file.
@Suite(.integrationHangGuard)
struct ListIdentitiesTests {
    static func kinds(_ result: JSONValue) -> [String] {
        guard case .array(let list)? = result["identities"] else { return [] }
        return list.compactMap { $0["kind"]?.stringValue }
    }

    @Test func listsTheActiveUsersIdentitiesTheSessionsFirst() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            #expect(try await client.errorCode("list_identities") == "no_active_user")
            _ = try await client.result("register", ["email": "ann@example.com", "password": "secret one"])
            let guest = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let guestID = try #require(guest["user"]?["id"]?.stringValue)
            let first = try await client.result("list_identities")
            #expect(first["user_id"]?.stringValue == guestID)
            #expect(Self.kinds(first) == ["anonymous"])

            _ = try await client.result(
                "link_credentials",
                ["credentials": ["type": "email_password", "email": "ann@example.com", "password": "secret one"]]
            )
            let linked = try await client.result("list_identities", ["user_id": .string(guestID)])
            #expect(Self.kinds(linked) == ["email_password", "anonymous"])
            #expect(linked["identities"]?.arrayValue?.first?["provider"] == "local")

            #expect(try await client.errorCode("list_identities", ["user_id": "u_nobody"]) == "user_not_found")
            let wrongType = try await client.call("list_identities", ["user_id": 3])
            #expect(
                wrongType["error"]?["message"]?.stringValue == "params.user_id must be a string, not number"
            )
            #expect(try await client.errorCode("list_identities", ["seat": "nowhere"]) == "seat_not_found")

            // The CLI: one identity a line, provider, kind and subject.
            let output = try await CLITests.usher(daemon, ["identities"])
            #expect(output.status == 0)
            let lines = output.stdout.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
            #expect(lines.map { $0.count } == [3, 3])
            #expect(lines.map { $0[1] } == ["email_password", "anonymous"])
            let json = try await CLITests.usher(daemon, ["identities", "--json", "--user", "ann@example.com"])
            #expect(json.status == 0 && json.stdout.contains(#""user_id":"\#(guestID)""#))
        }
    }
}
