import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `list_users` with `limit` and `after`: pages in the order users were added, a `next` cursor until the last page,
/// and the same users as the whole list.
@Suite(.integrationHangGuard)
struct PagingTests {
    static func ids(_ result: JSONValue) -> [String] {
        guard case .array(let users)? = result["users"] else { return [] }
        return users.compactMap { $0["id"]?.stringValue }
    }

    @Test func pagesCoverTheWholeListAndEndWithoutNext() async throws {
        let daemon = try DaemonProcess()
        try await ProtocolTests.seedUsers(25, into: daemon.stateDirectory)
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let client = try daemon.connect()
            let whole = try await client.result("list_users")
            #expect(whole["next"] == nil, "without limit, the answer is as it always was")
            let all = Self.ids(whole)
            #expect(all.count == 25)

            var paged: [String] = []
            var after: JSONValue?
            var pages = 0
            repeat {
                var params: [String: JSONValue] = ["limit": 10]
                if let after { params["after"] = after }
                let page = try await client.result("list_users", params)
                paged += Self.ids(page)
                after = page["next"]
                pages += 1
                #expect(page["generation"] == whole["generation"])
            } while after != nil && pages < 10
            #expect(pages == 3)
            #expect(paged == all)

            // A user removed after the cursor is skipped; the page after the cursor is still right.
            let first = try await client.result("list_users", ["limit": 5])
            let cursor = try #require(first["next"])
            _ = try await client.result("remove_user", ["user_id": .string(all[5])])
            let second = try await client.result("list_users", ["limit": 5, "after": cursor])
            #expect(Self.ids(second) == Array(all[6..<11]))
        }
    }

    @Test func badPagingParamsAreRefusedClearly() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            for params: [String: JSONValue] in [
                ["limit": 0], ["limit": 10_001], ["limit": "10"], ["after": "a1"], ["limit": 5, "after": "nope"],
                ["limit": 5, "after": 7],
            ] {
                #expect(try await client.errorCode("list_users", params) == "invalid_params", "for \(params)")
            }
            // The connection carries on.
            #expect(try await client.result("list_users", ["limit": 1])["users"] != nil)
        }
    }

    /// Registers and logs in `emails` at the local provider; returns their ids in that order.
    static func logIn(_ emails: [String], _ client: LineConnection) async throws -> [String] {
        var ids: [String] = []
        for email in emails {
            _ = try? await client.result("register", ["email": .string(email), "password": "secret123"])
            let login = try await client.result(
                "login",
                ["credentials": ["type": "email_password", "email": .string(email), "password": "secret123"]]
            )
            ids.append(try #require(login["user"]?["id"]?.stringValue))
        }
        return ids
    }

    @Test func cursorsTheDaemonNeverIssuedAreRefused() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let ids = try await Self.logIn((1...4).map { "user\($0)@example.com" }, client)
            let first = try await client.result("list_users", ["limit": 2])
            let issued = try #require(first["next"]?.stringValue)
            #expect(
                Self.ids(try await client.result("list_users", ["limit": 2, "after": .string(issued)])) == [
                    ids[2], ids[3],
                ]
            )
            // Another spelling of an issued cursor, one past the current generation, none at all.
            var forged = [
                "a999999", "a+3", "a0003", "a0", "a-1", "a 3", "a3 ", "a", "A3", "a3.0", "a9223372036854775807",
                "a99999999999999999999", "a٣", issued + "0", "0" + issued, " " + issued, issued.uppercased(),
            ]
            forged.removeAll { $0 == issued }
            for cursor in forged {
                #expect(
                    try await client.errorCode("list_users", ["limit": 2, "after": .string(cursor)])
                        == "invalid_params",
                    "cursor \(cursor)"
                )
            }
        }
    }

    @Test func aUserRemovedAndLoggedInAgainDuringAPassIsListedOnce() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let emails = (1...5).map { "user\($0)@example.com" }
            let ids = try await Self.logIn(emails, client)

            let first = try await client.result("list_users", ["limit": 2])
            var listed = Self.ids(first)
            #expect(listed == [ids[0], ids[1]])
            // During the pass: the first user (already listed) is removed and comes back, a newcomer arrives, and a
            // user not yet listed is removed.
            _ = try await client.result("remove_user", ["user_id": .string(ids[0])])
            _ = try await Self.logIn([emails[0], "newcomer@example.com"], client)
            _ = try await client.result("remove_user", ["user_id": .string(ids[3])])

            var after = first["next"]
            var pages = 1
            while let cursor = after, pages < 10 {
                let page = try await client.result("list_users", ["limit": 2, "after": cursor])
                listed += Self.ids(page)
                after = page["next"]
                pages += 1
            }
            #expect(Set(listed).count == listed.count, "no user twice: \(listed)")
            // Everyone there for the whole pass, once, in the order they were added; the others are not in it.
            #expect(listed == [ids[0], ids[1], ids[2], ids[4]], "\(listed)")
        }
    }
}
